//! An artifact's SPIR-V as a Vulkan executable: one shader module, and for
//! each entry point its work-group size (read from the module) and, made
//! on first launch, its compute pipeline: storage buffers through a push
//! descriptor set (binding `i` = buffer argument `i`), scalar arguments
//! through one push-constant block.

use std::ffi::CString;

use ash::vk;

use super::device::{Device, vk_error};
use crate::error::{Error, Result};

/// One entry point's pipeline for one argument layout.
pub(crate) struct Pipeline {
    pub(crate) pipeline: vk::Pipeline,
    pub(crate) layout: vk::PipelineLayout,
    set_layout: vk::DescriptorSetLayout,
    /// Storage buffers and push-constant bytes it was made for.
    pub(crate) buffers: usize,
    pub(crate) push_bytes: u32,
}

/// One kernel.
pub(crate) struct Kernel {
    pub(crate) name: String,
    entry: CString,
    /// `LocalSize` of the entry point.
    pub(crate) local_size: [u32; 3],
    pub(crate) pipeline: Option<Pipeline>,
}

/// The shader module and its kernels, in the artifact's order.
pub(crate) struct Executable {
    module: vk::ShaderModule,
    pub(crate) kernels: Vec<Kernel>,
}

/// SPIR-V words of a little-endian module, checked for its magic number.
fn words(bytes: &[u8]) -> Result<Vec<u32>> {
    if !bytes.len().is_multiple_of(4) || bytes.len() < 20 {
        return Err(Error::Unsupported(format!(
            "Vulkan: the artifact's kernels are not a SPIR-V module ({} bytes)",
            bytes.len()
        )));
    }
    let words: Vec<u32> = bytes
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    if words[0] != 0x0723_0203 {
        return Err(Error::Unsupported(format!(
            "Vulkan: the artifact's kernels are not SPIR-V (magic number {:#010x})",
            words[0]
        )));
    }
    Ok(words)
}

/// Whether a module is for Vulkan, and its entry points with their
/// `LocalSize`.
type EntryPoints = (bool, Vec<(String, [u32; 3])>);

/// The entry points' names with their `LocalSize`, and whether the module
/// declares the Shader capability (Vulkan) rather than Kernel (OpenCL).
pub(crate) fn entry_points(words: &[u32]) -> Result<EntryPoints> {
    const OP_CAPABILITY: u32 = 17;
    const OP_ENTRY_POINT: u32 = 15;
    const OP_EXECUTION_MODE: u32 = 16;
    const CAPABILITY_SHADER: u32 = 1;
    const MODE_LOCAL_SIZE: u32 = 17;
    let mut shader = false;
    let mut entries: Vec<(u32, String)> = Vec::new();
    let mut sizes: Vec<(u32, [u32; 3])> = Vec::new();
    let mut at = 5;
    while at < words.len() {
        let count = (words[at] >> 16) as usize;
        let opcode = words[at] & 0xffff;
        if count == 0 || at + count > words.len() {
            return Err(Error::Unsupported(format!(
                "Vulkan: the SPIR-V module is truncated at word {at}"
            )));
        }
        let operands = &words[at + 1..at + count];
        match opcode {
            OP_CAPABILITY if operands.first() == Some(&CAPABILITY_SHADER) => shader = true,
            OP_ENTRY_POINT if operands.len() >= 3 => {
                let bytes: Vec<u8> = operands[2..].iter().flat_map(|w| w.to_le_bytes()).collect();
                let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
                entries.push((
                    operands[1],
                    String::from_utf8_lossy(&bytes[..end]).into_owned(),
                ));
            }
            OP_EXECUTION_MODE if operands.len() == 5 && operands[1] == MODE_LOCAL_SIZE => {
                sizes.push((operands[0], [operands[2], operands[3], operands[4]]));
            }
            _ => {}
        }
        at += count;
    }
    let named = entries
        .into_iter()
        .map(|(id, name)| {
            let size = sizes
                .iter()
                .find(|(s, _)| *s == id)
                .map(|(_, size)| *size)
                .ok_or_else(|| {
                    Error::Unsupported(format!(
                        "Vulkan: entry point `{name}` has no LocalSize execution mode"
                    ))
                })?;
            Ok((name, size))
        })
        .collect::<Result<_>>()?;
    Ok((shader, named))
}

impl Executable {
    /// The shader module of `spirv`, with one kernel per name of `kernels`
    /// (each must be an entry point).
    pub(crate) fn new(device: &Device, spirv: &[u8], kernels: &[String]) -> Result<Self> {
        let words = words(spirv)?;
        let (shader, entries) = entry_points(&words)?;
        if !shader {
            return Err(Error::Unsupported(
                "Vulkan: the artifact's SPIR-V is for OpenCL (Kernel capability, no Shader): \
                 compile the model with --target=vulkan"
                    .into(),
            ));
        }
        let kernels = kernels
            .iter()
            .map(|name| {
                let (_, local_size) = entries.iter().find(|(n, _)| n == name).ok_or_else(|| {
                    Error::Unsupported(format!(
                        "Vulkan: kernel `{name}` is not an entry point of the artifact's SPIR-V"
                    ))
                })?;
                Ok(Kernel {
                    name: name.clone(),
                    entry: CString::new(name.as_str()).map_err(|_| {
                        Error::Unsupported(format!("Vulkan: kernel name `{name}` has a NUL"))
                    })?,
                    local_size: *local_size,
                    pipeline: None,
                })
            })
            .collect::<Result<_>>()?;
        let create = vk::ShaderModuleCreateInfo::default().code(&words);
        // SAFETY: `words` is a SPIR-V module; the driver validates it.
        let module = unsafe { device.device.create_shader_module(&create, None) }.map_err(|e| {
            vk_error(
                format!(
                    "{}: vkCreateShaderModule (the driver refused the SPIR-V)",
                    device.info.name
                ),
                e,
            )
        })?;
        Ok(Executable { module, kernels })
    }

    /// Kernel `index`'s pipeline for `buffers` storage buffers and
    /// `push_bytes` of push constants, made on first use.
    pub(crate) fn pipeline(
        &mut self,
        device: &Device,
        index: usize,
        buffers: usize,
        push_bytes: u32,
    ) -> Result<&Pipeline> {
        let module = self.module;
        let kernel = &mut self.kernels[index];
        if let Some(p) = &kernel.pipeline {
            if p.buffers != buffers || p.push_bytes != push_bytes {
                return Err(Error::InvalidInput(format!(
                    "kernel `{}` was launched with {} buffers and {} bytes of scalars, now with {buffers} and {push_bytes}",
                    kernel.name, p.buffers, p.push_bytes
                )));
            }
        } else {
            kernel.pipeline = Some(make_pipeline(device, module, kernel, buffers, push_bytes)?);
        }
        Ok(kernel.pipeline.as_ref().expect("made above"))
    }

    pub(crate) fn destroy(self, device: &Device) {
        let d = &device.device;
        // SAFETY: no queued work uses the pipelines (the session waited).
        unsafe {
            for kernel in self.kernels {
                if let Some(p) = kernel.pipeline {
                    d.destroy_pipeline(p.pipeline, None);
                    d.destroy_pipeline_layout(p.layout, None);
                    d.destroy_descriptor_set_layout(p.set_layout, None);
                }
            }
            d.destroy_shader_module(self.module, None);
        }
    }
}

fn make_pipeline(
    device: &Device,
    module: vk::ShaderModule,
    kernel: &Kernel,
    buffers: usize,
    push_bytes: u32,
) -> Result<Pipeline> {
    let d = &device.device;
    let bindings: Vec<vk::DescriptorSetLayoutBinding> = (0..buffers as u32)
        .map(|i| {
            vk::DescriptorSetLayoutBinding::default()
                .binding(i)
                .descriptor_type(vk::DescriptorType::STORAGE_BUFFER)
                .descriptor_count(1)
                .stage_flags(vk::ShaderStageFlags::COMPUTE)
        })
        .collect();
    let refused = |what: &str, e: vk::Result| {
        vk_error(
            format!("{}: {what} for kernel `{}`", device.info.name, kernel.name),
            e,
        )
    };
    // SAFETY (whole block): creation on the live device; partial objects
    // are destroyed on failure.
    unsafe {
        let set_layout = d
            .create_descriptor_set_layout(
                &vk::DescriptorSetLayoutCreateInfo::default()
                    .flags(vk::DescriptorSetLayoutCreateFlags::PUSH_DESCRIPTOR_KHR)
                    .bindings(&bindings),
                None,
            )
            .map_err(|e| refused("vkCreateDescriptorSetLayout", e))?;
        let ranges = [vk::PushConstantRange::default()
            .stage_flags(vk::ShaderStageFlags::COMPUTE)
            .offset(0)
            .size(push_bytes)];
        let set_layouts = [set_layout];
        let mut layout_info = vk::PipelineLayoutCreateInfo::default().set_layouts(&set_layouts);
        if push_bytes > 0 {
            layout_info = layout_info.push_constant_ranges(&ranges);
        }
        let layout = match d.create_pipeline_layout(&layout_info, None) {
            Ok(l) => l,
            Err(e) => {
                d.destroy_descriptor_set_layout(set_layout, None);
                return Err(refused("vkCreatePipelineLayout", e));
            }
        };
        let stage = vk::PipelineShaderStageCreateInfo::default()
            .stage(vk::ShaderStageFlags::COMPUTE)
            .module(module)
            .name(&kernel.entry);
        let create = [vk::ComputePipelineCreateInfo::default()
            .stage(stage)
            .layout(layout)];
        match d.create_compute_pipelines(vk::PipelineCache::null(), &create, None) {
            Ok(pipelines) => Ok(Pipeline {
                pipeline: pipelines[0],
                layout,
                set_layout,
                buffers,
                push_bytes,
            }),
            Err((_, e)) => {
                d.destroy_pipeline_layout(layout, None);
                d.destroy_descriptor_set_layout(set_layout, None);
                Err(refused(
                    "vkCreateComputePipelines (the driver refused the pipeline)",
                    e,
                ))
            }
        }
    }
}

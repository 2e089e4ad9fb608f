//! [`VulkanSession`]: runs an artifact's functions through Vulkan. A call
//! is one command buffer: the inputs' uploads (from mapped staging
//! buffers), whatever the artifact's host code records through the
//! `tcc_runtime_api` callbacks (dispatches, copies, constant uploads on
//! first use), the outputs' downloads; then one submit and a wait on the
//! session's fence. Every command is ordered after the one before by a
//! memory barrier, as on OpenCL's in-order queue, so the pool can hand a
//! released temporary to a later command of the same call.

use std::collections::HashMap;
use std::sync::Arc;

use ash::vk;

use super::device::{Buffer, Device, VulkanDeviceInfo, vk_error};
use super::executable::Executable;
use crate::Model;
use crate::abi::{self, TccBuffer};
use crate::artifact::FunctionInfo;
use crate::error::{Error, Result};
use crate::hal::callbacks::{BufferCopy, Callbacks, api_table, out_slot};
use crate::hal::shared::constant_at;
use crate::program_cache::SourceKind;
use crate::session::{CallState, KernelProfile, check_view, exec_error};
use crate::tensor::HostTensor;

/// Environment variable choosing the Vulkan device by index.
pub const VULKAN_DEVICE_ENV: &str = "TCC_VULKAN_DEVICE";

/// Timestamp queries per call (two per dispatch); dispatches past this
/// are not timed.
const QUERIES: u32 = 4096;

/// The Vulkan device, shared by its sessions.
#[derive(Clone)]
pub struct VulkanRuntime {
    device: Arc<Device>,
    profiling: bool,
}

crate::hal::shared::host_calls!(VulkanSession);

impl VulkanRuntime {
    /// Opens Vulkan device `index` (among the loader's physical devices),
    /// for several devices at once (`hal::Group`); each runtime has an
    /// instance of its own.
    pub fn with_device(index: usize) -> Result<Self> {
        Ok(VulkanRuntime {
            device: Arc::new(Device::open(Some(index))?),
            profiling: false,
        })
    }

    /// Opens the device `TCC_VULKAN_DEVICE` names (an index), else the
    /// first usable one. Without a loader or a device the error says so.
    pub fn new() -> Result<Self> {
        let index = match std::env::var(VULKAN_DEVICE_ENV) {
            Ok(v) if !v.is_empty() => Some(v.parse::<usize>().map_err(|_| {
                Error::InvalidInput(format!(
                    "{VULKAN_DEVICE_ENV}={v}: expected a device index (0, 1, ...)"
                ))
            })?),
            _ => None,
        };
        Ok(VulkanRuntime {
            device: Arc::new(Device::open(index)?),
            profiling: false,
        })
    }

    /// Times every dispatch with timestamps ([`VulkanSession::kernel_profile`]).
    pub fn with_profiling(mut self, on: bool) -> Self {
        self.profiling = on && self.device.timestamps;
        self
    }

    pub fn info(&self) -> &VulkanDeviceInfo {
        &self.device.info
    }

    /// A session of `model`, whose kernels must be Shader SPIR-V
    /// (`tcc compile --target=vulkan`).
    pub fn session(&self, model: &Model) -> Result<VulkanSession> {
        VulkanSession::new(self.device.clone(), model, self.profiling)
    }
}

/// Who owns a buffer the artifact holds in this call.
type Owner = crate::hal::shared::Owner<Buffer>;

struct Handle {
    buffer: vk::Buffer,
    offset: u64,
    bytes: u64,
    owner: Owner,
}

/// One model on the Vulkan device.
pub struct VulkanSession {
    device: Arc<Device>,
    model: Model,
    executable: Option<Executable>,
    command_pool: vk::CommandPool,
    command_buffer: vk::CommandBuffer,
    fence: vk::Fence,
    queries: Option<vk::QueryPool>,
    constants: Vec<Option<Buffer>>,
    arena: Option<Buffer>,
    /// Spare device buffers by size.
    pool: HashMap<u64, Vec<Buffer>>,
    /// Spare mapped staging buffers by size.
    staging_pool: HashMap<u64, Vec<Buffer>>,
    next_handle: u64,
    /// Per kernel: launches timed and their device nanoseconds.
    profile: Vec<(u64, u64)>,
}

impl VulkanSession {
    fn new(device: Arc<Device>, model: &Model, profiling: bool) -> Result<Self> {
        let artifact = model.artifact();
        if artifact.source_kind != SourceKind::SpirV {
            return Err(Error::Unsupported(format!(
                "Vulkan: {} holds {} kernels; the Vulkan backend runs SPIR-V from `tcc compile --target=vulkan`",
                artifact.path.display(),
                artifact.source_kind.name()
            )));
        }
        let executable = if artifact.kernel_names.is_empty() {
            None
        } else {
            Some(Executable::new(
                &device,
                &artifact.source,
                &artifact.kernel_names,
            )?)
        };
        let d = &device.device;
        let cleanup = |executable: Option<Executable>| {
            if let Some(e) = executable {
                e.destroy(&device);
            }
        };
        // SAFETY (whole block): creation on the live device; what was made
        // is destroyed on failure.
        unsafe {
            let command_pool = match d.create_command_pool(
                &vk::CommandPoolCreateInfo::default()
                    .queue_family_index(device.queue_family)
                    .flags(vk::CommandPoolCreateFlags::RESET_COMMAND_BUFFER),
                None,
            ) {
                Ok(p) => p,
                Err(e) => {
                    cleanup(executable);
                    return Err(vk_error("vkCreateCommandPool", e));
                }
            };
            let made = (|| -> Result<(vk::CommandBuffer, vk::Fence, Option<vk::QueryPool>)> {
                let command_buffer = d
                    .allocate_command_buffers(
                        &vk::CommandBufferAllocateInfo::default()
                            .command_pool(command_pool)
                            .level(vk::CommandBufferLevel::PRIMARY)
                            .command_buffer_count(1),
                    )
                    .map_err(|e| vk_error("vkAllocateCommandBuffers", e))?[0];
                let fence = d
                    .create_fence(&vk::FenceCreateInfo::default(), None)
                    .map_err(|e| vk_error("vkCreateFence", e))?;
                let queries = if profiling {
                    match d.create_query_pool(
                        &vk::QueryPoolCreateInfo::default()
                            .query_type(vk::QueryType::TIMESTAMP)
                            .query_count(QUERIES),
                        None,
                    ) {
                        Ok(q) => Some(q),
                        Err(e) => {
                            d.destroy_fence(fence, None);
                            return Err(vk_error("vkCreateQueryPool", e));
                        }
                    }
                } else {
                    None
                };
                Ok((command_buffer, fence, queries))
            })();
            let (command_buffer, fence, queries) = match made {
                Ok(m) => m,
                Err(e) => {
                    d.destroy_command_pool(command_pool, None);
                    cleanup(executable);
                    return Err(e);
                }
            };
            Ok(VulkanSession {
                constants: (0..artifact.constants.len()).map(|_| None).collect(),
                profile: vec![(0, 0); artifact.kernel_names.len()],
                device: device.clone(),
                model: model.clone(),
                executable,
                command_pool,
                command_buffer,
                fence,
                queries,
                arena: None,
                pool: HashMap::new(),
                staging_pool: HashMap::new(),
                next_handle: 0,
            })
        }
    }

    pub fn model(&self) -> &Model {
        &self.model
    }

    pub fn device_info(&self) -> &VulkanDeviceInfo {
        &self.device.info
    }

    /// The call of `f` (its inputs checked by `run_with_sources`, see
    /// [`crate::hal::shared::host_calls`]).
    fn run_checked(&mut self, f: &FunctionInfo, inputs: &[HostTensor]) -> Result<Vec<HostTensor>> {
        // SPIR-V is compiled for static shapes only (issue 33).
        crate::hal::shared::CallIo::<()>::new(&[], &[]).shapes_for(f, "the Vulkan driver")?;
        let model = self.model.clone();
        if f.arena_bytes > 0 && self.arena.as_ref().is_none_or(|a| a.bytes < f.arena_bytes) {
            if let Some(old) = self.arena.take() {
                old.destroy(&self.device);
            }
            self.arena = Some(self.device.buffer(f.arena_bytes, false)?);
        }
        let d = &self.device.device;
        let cb = self.command_buffer;
        // SAFETY: the command buffer is idle (every call waits for its fence).
        unsafe {
            d.reset_command_buffer(cb, vk::CommandBufferResetFlags::empty())
                .map_err(|e| vk_error("vkResetCommandBuffer", e))?;
            d.begin_command_buffer(
                cb,
                &vk::CommandBufferBeginInfo::default()
                    .flags(vk::CommandBufferUsageFlags::ONE_TIME_SUBMIT),
            )
            .map_err(|e| vk_error("vkBeginCommandBuffer", e))?;
            if let Some(q) = self.queries {
                d.cmd_reset_query_pool(cb, q, 0, QUERIES);
            }
        }
        let mut recorder = Recorder {
            device: &self.device,
            cb,
            queries: self.queries,
            timed: Vec::new(),
            commands: 0,
        };
        // Inputs: staged, then copied to device buffers; outputs: device
        // buffers, copied to staging at the end.
        let mut staging: Vec<Buffer> = Vec::new();
        let mut io: Vec<Buffer> = Vec::new();
        let result = (|| -> Result<()> {
            for tensor in inputs {
                let bytes = tensor.bytes.len() as u64;
                let mut stage = take(&mut self.staging_pool, &self.device, bytes, true)?;
                stage.host_bytes()[..tensor.bytes.len()].copy_from_slice(&tensor.bytes);
                let buffer = take(&mut self.pool, &self.device, bytes, false)?;
                recorder.copy(stage.buffer, 0, buffer.buffer, 0, bytes);
                staging.push(stage);
                io.push(buffer);
            }
            for desc in &f.outputs {
                io.push(take(
                    &mut self.pool,
                    &self.device,
                    desc.byte_size() as u64,
                    false,
                )?);
            }
            let mut cx = VulkanCall {
                recorder: &mut recorder,
                model: &model,
                function: f,
                executable: self.executable.as_mut(),
                constants: &mut self.constants,
                staging: &mut staging,
                staging_pool: &mut self.staging_pool,
                arena: self.arena.as_ref().map(|a| a.buffer),
                pool: &mut self.pool,
                handles: HashMap::new(),
                shared: HashMap::new(),
                next_handle: &mut self.next_handle,
                error: None,
            };
            let mut handles = Vec::new();
            for (i, buffer) in io.iter().enumerate() {
                let bytes = if i < inputs.len() {
                    inputs[i].bytes.len() as u64
                } else {
                    f.outputs[i - inputs.len()].byte_size() as u64
                };
                let what = if i < inputs.len() {
                    format!("input {i}")
                } else {
                    format!("output {}", i - inputs.len())
                };
                handles.push(cx.issue(buffer.buffer, 0, bytes, Owner::Io(what)));
            }
            let status = cx.call(&handles[..inputs.len()], &handles[inputs.len()..]);
            let error = cx.error.take();
            // Temporaries the artifact did not release go back to the pool.
            for (_, handle) in cx.handles.drain() {
                if let Owner::Temporary(buffer) = handle.owner {
                    put(cx.pool, buffer);
                }
            }
            match (status, error) {
                (0, None) => Ok(()),
                (_, Some(e)) => Err(e),
                (s, None) => Err(Error::ArtifactCall(format!(
                    "the entry returned status {s} without a failing runtime call"
                ))),
            }
        })();
        // Downloads.
        let mut downloads = Vec::new();
        let result = result.and_then(|()| {
            for (desc, buffer) in f.outputs.iter().zip(&io[inputs.len()..]) {
                let bytes = desc.byte_size() as u64;
                let stage = take(&mut self.staging_pool, &self.device, bytes, true)?;
                recorder.copy(buffer.buffer, 0, stage.buffer, 0, bytes);
                downloads.push(stage);
            }
            Ok(())
        });
        let timed = std::mem::take(&mut recorder.timed);
        // Submit what was recorded even after an error: the command buffer
        // must end, and nothing may be freed while it is pending.
        let submitted = self.submit_and_wait();
        let outputs = result.and(submitted).and_then(|()| {
            f.outputs
                .iter()
                .zip(downloads.iter_mut())
                .map(|(desc, stage)| {
                    let n = desc.byte_size();
                    HostTensor::new(
                        desc.dtype,
                        desc.shape.clone(),
                        stage.host_bytes()[..n].to_vec(),
                    )
                })
                .collect::<Result<Vec<_>>>()
        });
        let outputs = outputs.and_then(|o| {
            self.collect_profile(&timed)?;
            Ok(o)
        });
        for buffer in io {
            put(&mut self.pool, buffer);
        }
        for buffer in staging.into_iter().chain(downloads) {
            put(&mut self.staging_pool, buffer);
        }
        outputs.map_err(|e| exec_error(f, e))
    }

    fn submit_and_wait(&mut self) -> Result<()> {
        let d = &self.device.device;
        let cbs = [self.command_buffer];
        // SAFETY: the command buffer is recording; the fence is unsignaled.
        unsafe {
            d.end_command_buffer(self.command_buffer)
                .map_err(|e| vk_error("vkEndCommandBuffer", e))?;
            {
                // The queue is the device's, shared by its sessions (the
                // lanes of `hal::Lanes` submit from threads of their own):
                // Vulkan wants submits to one queue serialized.
                let _queue = self
                    .device
                    .queue_lock
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                d.queue_submit(
                    self.device.queue,
                    &[vk::SubmitInfo::default().command_buffers(&cbs)],
                    self.fence,
                )
                .map_err(|e| vk_error("vkQueueSubmit", e))?;
            }
            let waited = d
                .wait_for_fences(&[self.fence], true, u64::MAX)
                .map_err(|e| vk_error("vkWaitForFences", e));
            d.reset_fences(&[self.fence])
                .map_err(|e| vk_error("vkResetFences", e))?;
            waited
        }
    }

    fn collect_profile(&mut self, timed: &[(usize, u32)]) -> Result<()> {
        let Some(q) = self.queries else {
            return Ok(());
        };
        if timed.is_empty() {
            return Ok(());
        }
        let count = timed.iter().map(|&(_, first)| first + 2).max().unwrap_or(0);
        let mut ticks = vec![0u64; count as usize];
        // SAFETY: the queries were written by the finished command buffer.
        unsafe {
            self.device
                .device
                .get_query_pool_results(q, 0, &mut ticks, vk::QueryResultFlags::TYPE_64)
                .map_err(|e| vk_error("vkGetQueryPoolResults", e))?;
        }
        let period = self.device.info.timestamp_period_ns as f64;
        for &(kernel, first) in timed {
            let (start, end) = (ticks[first as usize], ticks[first as usize + 1]);
            let entry = &mut self.profile[kernel];
            entry.0 += 1;
            entry.1 += (end.saturating_sub(start) as f64 * period) as u64;
        }
        Ok(())
    }

    /// Per-kernel device time since the start or the last reset (empty
    /// without profiling).
    pub fn kernel_profile(&mut self) -> Result<Vec<KernelProfile>> {
        if self.queries.is_none() {
            return Ok(Vec::new());
        }
        Ok(self
            .model
            .kernel_names()
            .iter()
            .zip(&self.profile)
            .filter(|(_, (calls, _))| *calls > 0)
            .map(|(name, &(calls, total_ns))| KernelProfile {
                name: name.clone(),
                calls,
                total_ns,
            })
            .collect())
    }

    pub fn reset_profile(&mut self) -> Result<()> {
        self.profile.iter_mut().for_each(|p| *p = (0, 0));
        Ok(())
    }
}

impl Drop for VulkanSession {
    fn drop(&mut self) {
        let device = self.device.clone();
        let d = &device.device;
        // SAFETY: every call waited for its fence: nothing is pending.
        unsafe {
            if let Some(q) = self.queries.take() {
                d.destroy_query_pool(q, None);
            }
            d.destroy_fence(self.fence, None);
            d.destroy_command_pool(self.command_pool, None);
        }
        if let Some(e) = self.executable.take() {
            e.destroy(&device);
        }
        let buffers = self
            .constants
            .drain(..)
            .flatten()
            .chain(self.arena.take())
            .chain(self.pool.drain().flat_map(|(_, v)| v))
            .chain(self.staging_pool.drain().flat_map(|(_, v)| v));
        for b in buffers {
            b.destroy(&device);
        }
    }
}

/// A buffer of at least `bytes` from `pool`, or a new one.
fn take(
    pool: &mut HashMap<u64, Vec<Buffer>>,
    device: &Device,
    bytes: u64,
    host: bool,
) -> Result<Buffer> {
    let size = bytes.max(4).next_multiple_of(4);
    if let Some(b) = pool.get_mut(&size).and_then(Vec::pop) {
        return Ok(b);
    }
    device.buffer(size, host)
}

fn put(pool: &mut HashMap<u64, Vec<Buffer>>, buffer: Buffer) {
    pool.entry(buffer.bytes).or_default().push(buffer);
}

/// Records commands into the call's command buffer, each after a barrier
/// on everything before it.
struct Recorder<'a> {
    device: &'a Device,
    cb: vk::CommandBuffer,
    queries: Option<vk::QueryPool>,
    /// (kernel, first query) of each timed dispatch.
    timed: Vec<(usize, u32)>,
    commands: usize,
}

impl Recorder<'_> {
    fn barrier(&mut self) {
        if self.commands > 0 {
            let all = vk::AccessFlags::SHADER_READ
                | vk::AccessFlags::SHADER_WRITE
                | vk::AccessFlags::TRANSFER_READ
                | vk::AccessFlags::TRANSFER_WRITE;
            let stages = vk::PipelineStageFlags::COMPUTE_SHADER | vk::PipelineStageFlags::TRANSFER;
            let barrier = [vk::MemoryBarrier::default()
                .src_access_mask(all)
                .dst_access_mask(all)];
            // SAFETY: recording on this call's command buffer.
            unsafe {
                self.device.device.cmd_pipeline_barrier(
                    self.cb,
                    stages,
                    stages,
                    vk::DependencyFlags::empty(),
                    &barrier,
                    &[],
                    &[],
                )
            };
        }
        self.commands += 1;
    }

    fn copy(
        &mut self,
        src: vk::Buffer,
        src_offset: u64,
        dst: vk::Buffer,
        dst_offset: u64,
        bytes: u64,
    ) {
        if bytes == 0 {
            return;
        }
        self.barrier();
        let region = [vk::BufferCopy {
            src_offset,
            dst_offset,
            size: bytes,
        }];
        // SAFETY: both buffers live until the call's fence; ranges checked.
        unsafe {
            self.device
                .device
                .cmd_copy_buffer(self.cb, src, dst, &region)
        };
    }
}

/// State of one entry call; `tcc_runtime_api.ctx` points at it.
struct VulkanCall<'a, 'r> {
    recorder: &'a mut Recorder<'r>,
    model: &'a Model,
    function: &'a FunctionInfo,
    executable: Option<&'a mut Executable>,
    constants: &'a mut [Option<Buffer>],
    /// Staging buffers of this call (freed after its fence).
    staging: &'a mut Vec<Buffer>,
    staging_pool: &'a mut HashMap<u64, Vec<Buffer>>,
    arena: Option<vk::Buffer>,
    pool: &'a mut HashMap<u64, Vec<Buffer>>,
    handles: HashMap<usize, Handle>,
    shared: HashMap<(u8, u64, u64), usize>,
    next_handle: &'a mut u64,
    error: Option<Error>,
}

impl CallState for VulkanCall<'_, '_> {
    fn first_error(&mut self) -> &mut Option<Error> {
        &mut self.error
    }
}

impl VulkanCall<'_, '_> {
    fn call(&mut self, inputs: &[*mut TccBuffer], outputs: &[*mut TccBuffer]) -> i32 {
        let api = api_table(self, &[]);
        // SAFETY: the entry comes from the validated artifact; the handle
        // arrays have the lengths its descriptor declares; `self` outlives
        // the call.
        unsafe { (self.function.entry)(&api, inputs.as_ptr(), outputs.as_ptr()) }
    }

    fn issue(
        &mut self,
        buffer: vk::Buffer,
        offset: u64,
        bytes: u64,
        owner: Owner,
    ) -> *mut TccBuffer {
        *self.next_handle = self.next_handle.wrapping_add(1).max(1);
        let handle = (*self.next_handle as usize).wrapping_mul(16).max(16);
        self.handles.insert(
            handle,
            Handle {
                buffer,
                offset,
                bytes,
                owner,
            },
        );
        handle as *mut TccBuffer
    }

    fn lookup(&self, b: *mut TccBuffer, what: &str) -> Result<(vk::Buffer, u64, u64)> {
        self.handles
            .get(&(b as usize))
            .map(|h| (h.buffer, h.offset, h.bytes))
            .ok_or_else(|| {
                Error::InvalidInput(format!(
                    "{what}: {b:p} is not a buffer of this call (released, or never handed out)"
                ))
            })
    }
}

impl Callbacks for VulkanCall<'_, '_> {
    fn alloc(&mut self, bytes: u64, out: *mut *mut TccBuffer) -> Result<()> {
        let out = out_slot(out)?;
        let buffer = take(self.pool, self.recorder.device, bytes, false)?;
        let vk_buffer = buffer.buffer;
        let handle = self.issue(vk_buffer, 0, bytes, Owner::Temporary(buffer));
        *out = handle;
        Ok(())
    }

    fn release(&mut self, b: *mut TccBuffer) -> Result<()> {
        let released =
            crate::hal::shared::release_temporary(&mut self.handles, b, |h| h.owner, |h| &h.owner)?;
        if let Some(buffer) = released {
            put(self.pool, buffer);
        }
        Ok(())
    }

    fn constant(&mut self, index: u32, out: *mut *mut TccBuffer) -> Result<()> {
        let out = out_slot(out)?;
        let artifact = self.model.artifact();
        let c = *constant_at(&artifact.constants, index)?;
        if let Some(&h) = self.shared.get(&(0, index as u64, 0)) {
            *out = h as *mut TccBuffer;
            return Ok(());
        }
        if self.constants[index as usize].is_none() {
            let device = self.recorder.device;
            let buffer = device.buffer(c.bytes, false)?;
            // SAFETY: the artifact (and its constants) outlives the session.
            let data = unsafe { c.as_slice() };
            if !data.is_empty() {
                let mut stage = take(self.staging_pool, device, c.bytes, true)?;
                stage.host_bytes()[..data.len()].copy_from_slice(data);
                self.recorder
                    .copy(stage.buffer, 0, buffer.buffer, 0, data.len() as u64);
                self.staging.push(stage);
            }
            self.constants[index as usize] = Some(buffer);
        }
        let buffer = self.constants[index as usize]
            .as_ref()
            .map(|b| b.buffer)
            .expect("uploaded above");
        let h = self.issue(buffer, 0, c.bytes, Owner::Constant(index));
        self.shared.insert((0, index as u64, 0), h as usize);
        *out = h;
        Ok(())
    }

    fn view(&mut self, offset: u64, bytes: u64, out: *mut *mut TccBuffer) -> Result<()> {
        let out = out_slot(out)?;
        check_view(self.function, offset, bytes)?;
        if let Some(&h) = self.shared.get(&(1, offset, bytes)) {
            *out = h as *mut TccBuffer;
            return Ok(());
        }
        let arena = self
            .arena
            .ok_or_else(|| Error::InvalidInput(format!("@{} has no arena", self.function.name)))?;
        let h = self.issue(arena, offset, bytes, Owner::Arena);
        self.shared.insert((1, offset, bytes), h as usize);
        *out = h;
        Ok(())
    }

    /// The buffer and the handle's offset in it.
    type Buffer = (vk::Buffer, u64);

    fn buffer(&self, handle: *mut TccBuffer, what: &str) -> Result<((vk::Buffer, u64), u64)> {
        let (buffer, base, bytes) = self.lookup(handle, what)?;
        Ok(((buffer, base), bytes))
    }

    fn enqueue_copy(&mut self, copy: BufferCopy<(vk::Buffer, u64)>) -> Result<()> {
        let BufferCopy {
            dst: (dst_buffer, dst_base),
            dst_offset,
            src: (src_buffer, src_base),
            src_offset,
            bytes,
        } = copy;
        self.recorder.copy(
            src_buffer,
            src_base + src_offset,
            dst_buffer,
            dst_base + dst_offset,
            bytes,
        );
        Ok(())
    }

    /// Any number of arguments: the pipeline is made for the first
    /// launch's, and a later launch with others is refused.
    fn kernel_signature(&self, kernel: u32) -> Result<(&str, Option<usize>)> {
        let kernels = self
            .executable
            .as_deref()
            .map_or(&[][..], |e| &e.kernels[..]);
        let k = crate::hal::shared::kernel_at(kernels, kernel)?;
        Ok((&k.name, None))
    }

    fn dispatch(&mut self, kernel: u32, launch: abi::LaunchArgs<'_>) -> Result<()> {
        let device = self.recorder.device;
        let (name, local_size) = {
            let kernels = self
                .executable
                .as_deref()
                .map_or(&[][..], |e| &e.kernels[..]);
            let k = crate::hal::shared::kernel_at(kernels, kernel)?;
            (k.name.clone(), k.local_size)
        };
        let abi::LaunchArgs {
            global,
            local,
            args,
        } = launch;
        // Buffers become descriptors, scalars the push-constant block.
        let mut buffers: Vec<vk::DescriptorBufferInfo> = Vec::new();
        let mut push: Vec<u8> = Vec::new();
        let alignment = device.info.min_storage_buffer_offset_alignment.max(1);
        for (i, a) in args.iter().enumerate() {
            // SAFETY: the union member read is the one `kind` names.
            unsafe {
                match a.kind {
                    abi::TCC_ARG_BUFFER => {
                        let (buffer, offset, bytes) =
                            self.lookup(a.value.buffer, &format!("kernel `{name}` argument {i}"))?;
                        if offset % alignment != 0 {
                            return Err(Error::Unsupported(format!(
                                "Vulkan: kernel `{name}` argument {i} starts at byte {offset} of its buffer, \
                                 not a multiple of {}'s storage-buffer offset alignment {alignment}",
                                device.info.name
                            )));
                        }
                        buffers.push(
                            vk::DescriptorBufferInfo::default()
                                .buffer(buffer)
                                .offset(offset)
                                .range(bytes.max(4).next_multiple_of(4)),
                        );
                    }
                    abi::TCC_ARG_I32 => push.extend(a.value.i32.to_le_bytes()),
                    abi::TCC_ARG_F32 => push.extend(a.value.f32.to_le_bytes()),
                    abi::TCC_ARG_I64 => {
                        push.resize(push.len().next_multiple_of(8), 0);
                        push.extend(a.value.i64.to_le_bytes());
                    }
                    other => {
                        return Err(Error::InvalidInput(format!(
                            "kernel `{name}` argument {i}: unknown arg kind {other}"
                        )));
                    }
                }
            }
        }
        // The work-group size is the shader's; the NDRange must be whole
        // work-groups of it.
        let mut groups = [1u32; 3];
        for axis in 0..3 {
            let g = global.get(axis).copied().unwrap_or(1);
            if let Some(l) = local.and_then(|l| l.get(axis)).copied().filter(|&l| l != 0)
                && l != local_size[axis] as u64
            {
                return Err(Error::InvalidInput(format!(
                    "kernel `{name}`: launched with work-groups of {:?} but its SPIR-V declares LocalSize {local_size:?}",
                    local.unwrap_or(&[])
                )));
            }
            if g % local_size[axis] as u64 != 0 {
                return Err(Error::InvalidInput(format!(
                    "kernel `{name}`: global size {g} on axis {axis} is not a multiple of the work-group size {}",
                    local_size[axis]
                )));
            }
            let n = g / local_size[axis] as u64;
            if n > device.info.max_workgroup_count[axis] as u64 {
                return Err(Error::Unsupported(format!(
                    "Vulkan: kernel `{name}` needs {n} work-groups on axis {axis}; {} allows {}",
                    device.info.name, device.info.max_workgroup_count[axis]
                )));
            }
            groups[axis] = n as u32;
        }
        if groups.contains(&0) {
            return Ok(()); // An empty NDRange does nothing.
        }
        let push_bytes = push.len().next_multiple_of(4) as u32;
        push.resize(push_bytes as usize, 0);
        let executable = self
            .executable
            .as_deref_mut()
            .expect("the kernel was found above");
        let pipeline = executable.pipeline(device, kernel as usize, buffers.len(), push_bytes)?;
        let (vk_pipeline, layout) = (pipeline.pipeline, pipeline.layout);
        let writes: Vec<vk::WriteDescriptorSet> = buffers
            .iter()
            .enumerate()
            .map(|(i, info)| {
                vk::WriteDescriptorSet::default()
                    .dst_binding(i as u32)
                    .descriptor_type(vk::DescriptorType::STORAGE_BUFFER)
                    .buffer_info(std::slice::from_ref(info))
            })
            .collect();
        let recorder = &mut *self.recorder;
        recorder.barrier();
        let cb = recorder.cb;
        let query = match recorder.queries {
            Some(q) if (recorder.timed.len() as u32 + 1) * 2 <= QUERIES => {
                let first = recorder.timed.len() as u32 * 2;
                recorder.timed.push((kernel as usize, first));
                Some((q, first))
            }
            _ => None,
        };
        let d = &device.device;
        // SAFETY: recording on this call's command buffer with a pipeline
        // and descriptors that live until its fence.
        unsafe {
            d.cmd_bind_pipeline(cb, vk::PipelineBindPoint::COMPUTE, vk_pipeline);
            if !writes.is_empty() {
                device.push_descriptor.cmd_push_descriptor_set(
                    cb,
                    vk::PipelineBindPoint::COMPUTE,
                    layout,
                    0,
                    &writes,
                );
            }
            if push_bytes > 0 {
                d.cmd_push_constants(cb, layout, vk::ShaderStageFlags::COMPUTE, 0, &push);
            }
            if let Some((q, first)) = query {
                d.cmd_write_timestamp(cb, vk::PipelineStageFlags::TOP_OF_PIPE, q, first);
            }
            d.cmd_dispatch(cb, groups[0], groups[1], groups[2]);
            if let Some((q, first)) = query {
                d.cmd_write_timestamp(cb, vk::PipelineStageFlags::BOTTOM_OF_PIPE, q, first + 1);
            }
        }
        Ok(())
    }
}

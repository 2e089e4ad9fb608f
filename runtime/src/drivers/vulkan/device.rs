//! The Vulkan device: the loader (opened at run time), an instance, the
//! first physical device with a compute queue, a logical device with
//! `VK_KHR_push_descriptor`, and buffers in its memory.

use std::ffi::CStr;

use ash::vk;

use crate::error::{Error, Result};

/// A failed Vulkan call, naming the driver, the call and its result.
pub(crate) fn vk_error(what: impl std::fmt::Display, code: vk::Result) -> Error {
    match code {
        vk::Result::ERROR_OUT_OF_DEVICE_MEMORY | vk::Result::ERROR_OUT_OF_HOST_MEMORY => {
            Error::OutOfDeviceMemory(format!("Vulkan: {what} failed: {code:?}"))
        }
        _ => Error::Vulkan {
            what: what.to_string(),
            code: format!("{code:?}"),
        },
    }
}

/// Environment variable naming the Vulkan loader library to open instead
/// of `libvulkan.so.1`.
pub const LOADER_ENV: &str = "TCC_VULKAN_LOADER";

/// What the runtime reports about the Vulkan device.
#[derive(Clone, Debug, serde::Serialize)]
pub struct VulkanDeviceInfo {
    /// Index among the instance's physical devices.
    pub index: usize,
    pub name: String,
    /// `cpu`, `discrete-gpu`, `integrated-gpu`, `virtual-gpu` or `other`.
    pub kind: String,
    /// Vulkan version the device supports, e.g. "1.3.230".
    pub api_version: String,
    /// Driver name and version (`VK_KHR_driver_properties`), e.g. "llvmpipe
    /// Mesa 22.3.6".
    pub driver: String,
    pub max_workgroup_invocations: u32,
    pub max_workgroup_count: [u32; 3],
    pub min_storage_buffer_offset_alignment: u64,
    /// Nanoseconds per timestamp tick (0: no compute timestamps).
    pub timestamp_period_ns: f32,
}

impl VulkanDeviceInfo {
    /// `Vulkan device 0: llvmpipe (LLVM 15.0.6, 256 bits) (cpu, Vulkan 1.3.230, llvmpipe Mesa 22.3.6)`.
    pub fn summary(&self) -> String {
        format!(
            "Vulkan device {}: {} ({}, Vulkan {}, {})",
            self.index, self.name, self.kind, self.api_version, self.driver
        )
    }
}

/// The device and what a session needs of it.
pub(crate) struct Device {
    _entry: ash::Entry,
    instance: ash::Instance,
    pub(crate) device: ash::Device,
    pub(crate) push_descriptor: ash::khr::push_descriptor::Device,
    pub(crate) queue: vk::Queue,
    /// Held around `vkQueueSubmit`: the queue is externally synchronized.
    pub(crate) queue_lock: std::sync::Mutex<()>,
    pub(crate) queue_family: u32,
    memory: vk::PhysicalDeviceMemoryProperties,
    pub(crate) info: VulkanDeviceInfo,
    /// Whether the queue writes timestamps.
    pub(crate) timestamps: bool,
}

fn version(v: u32) -> String {
    format!(
        "{}.{}.{}",
        vk::api_version_major(v),
        vk::api_version_minor(v),
        vk::api_version_patch(v)
    )
}

impl Device {
    /// Opens the loader and the device `index` (`TCC_VULKAN_DEVICE`, else
    /// the first with a compute queue and push descriptors).
    pub(crate) fn open(index: Option<usize>) -> Result<Self> {
        let (entry, _) = Self::loader()?;
        let app = vk::ApplicationInfo::default()
            .application_name(c"tcc")
            .api_version(vk::API_VERSION_1_1);
        let create = vk::InstanceCreateInfo::default().application_info(&app);
        // SAFETY: valid create info; the instance is destroyed in Drop.
        let instance = unsafe { entry.create_instance(&create, None) }.map_err(|e| {
            Error::VulkanUnavailable(format!(
                "vkCreateInstance failed: {e:?} (no Vulkan driver?)"
            ))
        })?;
        match Self::open_on(entry.clone(), &instance, index) {
            Ok(device) => Ok(device),
            Err(e) => {
                // SAFETY: nothing was created from the instance that lives on.
                unsafe { instance.destroy_instance(None) };
                Err(e)
            }
        }
    }

    /// How many physical devices the loader reports (an error without a
    /// loader or a driver).
    pub(crate) fn count() -> Result<usize> {
        let (entry, _) = Self::loader()?;
        let app = vk::ApplicationInfo::default()
            .application_name(c"tcc")
            .api_version(vk::API_VERSION_1_1);
        // SAFETY: valid create info; the instance is destroyed below.
        let instance = unsafe {
            entry.create_instance(
                &vk::InstanceCreateInfo::default().application_info(&app),
                None,
            )
        }
        .map_err(|e| {
            Error::VulkanUnavailable(format!(
                "vkCreateInstance failed: {e:?} (no Vulkan driver?)"
            ))
        })?;
        // SAFETY: a live instance, destroyed once after the query.
        let n = unsafe { instance.enumerate_physical_devices() }
            .map(|p| p.len())
            .map_err(|e| vk_error("vkEnumeratePhysicalDevices", e));
        unsafe { instance.destroy_instance(None) };
        n
    }

    /// The loader (`TCC_VULKAN_LOADER`, else `libvulkan.so.1`) and its name.
    fn loader() -> Result<(ash::Entry, String)> {
        // SAFETY: loading the Vulkan loader runs its initializers.
        let (entry, loader) = match std::env::var_os(LOADER_ENV) {
            Some(path) if !path.is_empty() => (
                unsafe { ash::Entry::load_from(&path) },
                path.to_string_lossy().into_owned(),
            ),
            _ => (unsafe { ash::Entry::load() }, "libvulkan.so.1".to_string()),
        };
        let entry = entry.map_err(|e| {
            Error::VulkanUnavailable(format!(
                "cannot open the Vulkan loader ({loader}): {e}; install it and a driver, \
                 e.g. `apt-get install libvulkan1 mesa-vulkan-drivers` (lavapipe, a CPU device)"
            ))
        })?;
        Ok((entry, loader))
    }

    fn open_on(entry: ash::Entry, instance: &ash::Instance, index: Option<usize>) -> Result<Self> {
        // SAFETY: a live instance.
        let physical = unsafe { instance.enumerate_physical_devices() }
            .map_err(|e| vk_error("vkEnumeratePhysicalDevices", e))?;
        if physical.is_empty() {
            return Err(Error::VulkanUnavailable(
                "the Vulkan loader found no device; install a driver, e.g. \
                 `apt-get install mesa-vulkan-drivers` (lavapipe)"
                    .into(),
            ));
        }
        let mut refusals = Vec::new();
        let candidates: Vec<usize> = match index {
            Some(i) if i < physical.len() => vec![i],
            Some(i) => {
                return Err(Error::VulkanUnavailable(format!(
                    "Vulkan device {i} does not exist ({} devices)",
                    physical.len()
                )));
            }
            None => (0..physical.len()).collect(),
        };
        for i in candidates {
            match Self::create(entry.clone(), instance, physical[i], i) {
                Ok(device) => return Ok(device),
                Err(reason) => refusals.push(format!("device {i}: {reason}")),
            }
        }
        Err(Error::VulkanUnavailable(format!(
            "no usable Vulkan device: {}",
            refusals.join("; ")
        )))
    }

    fn create(
        entry: ash::Entry,
        instance: &ash::Instance,
        physical: vk::PhysicalDevice,
        index: usize,
    ) -> std::result::Result<Self, String> {
        // SAFETY (whole function): queries and creation on a live instance
        // and one of its physical devices.
        unsafe {
            let mut driver = vk::PhysicalDeviceDriverProperties::default();
            let mut properties2 = vk::PhysicalDeviceProperties2::default().push_next(&mut driver);
            instance.get_physical_device_properties2(physical, &mut properties2);
            let properties = properties2.properties;
            let name = properties
                .device_name_as_c_str()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default();
            let driver_name = driver
                .driver_name_as_c_str()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default();
            let driver_info = driver
                .driver_info_as_c_str()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default();
            let families = instance.get_physical_device_queue_family_properties(physical);
            let family = families
                .iter()
                .position(|f| f.queue_flags.contains(vk::QueueFlags::COMPUTE))
                .ok_or_else(|| format!("{name} has no compute queue"))?;
            let extensions = instance
                .enumerate_device_extension_properties(physical)
                .map_err(|e| format!("vkEnumerateDeviceExtensionProperties: {e:?}"))?;
            let wanted: &CStr = ash::khr::push_descriptor::NAME;
            if !extensions
                .iter()
                .any(|e| e.extension_name_as_c_str().is_ok_and(|n| n == wanted))
            {
                return Err(format!("{name} lacks VK_KHR_push_descriptor"));
            }
            let priorities = [1.0f32];
            let queues = [vk::DeviceQueueCreateInfo::default()
                .queue_family_index(family as u32)
                .queue_priorities(&priorities)];
            let names = [wanted.as_ptr()];
            let create = vk::DeviceCreateInfo::default()
                .queue_create_infos(&queues)
                .enabled_extension_names(&names);
            let device = instance
                .create_device(physical, &create, None)
                .map_err(|e| format!("vkCreateDevice on {name}: {e:?}"))?;
            let queue = device.get_device_queue(family as u32, 0);
            let push_descriptor = ash::khr::push_descriptor::Device::new(instance, &device);
            let memory = instance.get_physical_device_memory_properties(physical);
            let limits = properties.limits;
            let timestamps =
                families[family].timestamp_valid_bits > 0 && limits.timestamp_period > 0.0;
            let kind = match properties.device_type {
                vk::PhysicalDeviceType::CPU => "cpu",
                vk::PhysicalDeviceType::DISCRETE_GPU => "discrete-gpu",
                vk::PhysicalDeviceType::INTEGRATED_GPU => "integrated-gpu",
                vk::PhysicalDeviceType::VIRTUAL_GPU => "virtual-gpu",
                _ => "other",
            };
            Ok(Device {
                _entry: entry,
                instance: instance.clone(),
                device,
                push_descriptor,
                queue,
                queue_lock: std::sync::Mutex::new(()),
                queue_family: family as u32,
                memory,
                info: VulkanDeviceInfo {
                    index,
                    name,
                    kind: kind.into(),
                    api_version: version(properties.api_version),
                    driver: format!("{driver_name} {driver_info}").trim().to_string(),
                    max_workgroup_invocations: limits.max_compute_work_group_invocations,
                    max_workgroup_count: limits.max_compute_work_group_count,
                    min_storage_buffer_offset_alignment: limits.min_storage_buffer_offset_alignment,
                    timestamp_period_ns: if timestamps {
                        limits.timestamp_period
                    } else {
                        0.0
                    },
                },
                timestamps,
            })
        }
    }

    /// The first memory type of `bits` with `flags`.
    fn memory_type(&self, bits: u32, flags: vk::MemoryPropertyFlags) -> Option<u32> {
        (0..self.memory.memory_type_count).find(|&i| {
            bits & (1 << i) != 0
                && self.memory.memory_types[i as usize]
                    .property_flags
                    .contains(flags)
        })
    }

    /// A buffer of `bytes` bytes (at least 4) for storage and copies:
    /// device-local, or host-visible and mapped for `host`.
    pub(crate) fn buffer(&self, bytes: u64, host: bool) -> Result<Buffer> {
        let size = bytes.max(4).next_multiple_of(4);
        let usage = vk::BufferUsageFlags::STORAGE_BUFFER
            | vk::BufferUsageFlags::TRANSFER_SRC
            | vk::BufferUsageFlags::TRANSFER_DST;
        let create = vk::BufferCreateInfo::default()
            .size(size)
            .usage(usage)
            .sharing_mode(vk::SharingMode::EXCLUSIVE);
        let d = &self.device;
        // SAFETY (whole block): creation on the live device; every object
        // is destroyed on the error paths or by `Buffer::destroy`.
        unsafe {
            let buffer = d
                .create_buffer(&create, None)
                .map_err(|e| vk_error(format!("vkCreateBuffer({size} bytes)"), e))?;
            let requirements = d.get_buffer_memory_requirements(buffer);
            let flags = if host {
                vk::MemoryPropertyFlags::HOST_VISIBLE | vk::MemoryPropertyFlags::HOST_COHERENT
            } else {
                vk::MemoryPropertyFlags::DEVICE_LOCAL
            };
            let Some(type_index) = self
                .memory_type(requirements.memory_type_bits, flags)
                .or_else(|| {
                    // Device-local memory is a preference, not a need.
                    (!host).then(|| {
                        self.memory_type(
                            requirements.memory_type_bits,
                            vk::MemoryPropertyFlags::empty(),
                        )
                    })?
                })
            else {
                d.destroy_buffer(buffer, None);
                return Err(Error::VulkanUnavailable(format!(
                    "{} has no {flags:?} memory for a storage buffer",
                    self.info.name
                )));
            };
            let allocate = vk::MemoryAllocateInfo::default()
                .allocation_size(requirements.size)
                .memory_type_index(type_index);
            let memory = match d.allocate_memory(&allocate, None) {
                Ok(m) => m,
                Err(e) => {
                    d.destroy_buffer(buffer, None);
                    return Err(vk_error(format!("vkAllocateMemory({size} bytes)"), e));
                }
            };
            let bound = d.bind_buffer_memory(buffer, memory, 0);
            let mapped = bound.and_then(|()| {
                if host {
                    d.map_memory(memory, 0, vk::WHOLE_SIZE, vk::MemoryMapFlags::empty())
                        .map(|p| p as *mut u8)
                } else {
                    Ok(std::ptr::null_mut())
                }
            });
            match mapped {
                Ok(mapped) => Ok(Buffer {
                    buffer,
                    memory,
                    bytes: size,
                    mapped,
                }),
                Err(e) => {
                    d.destroy_buffer(buffer, None);
                    d.free_memory(memory, None);
                    Err(vk_error("vkBindBufferMemory/vkMapMemory", e))
                }
            }
        }
    }
}

impl Drop for Device {
    fn drop(&mut self) {
        // SAFETY: every session object was destroyed before the device
        // (sessions hold an Arc of it); the device is idle after the wait.
        unsafe {
            let _ = self.device.device_wait_idle();
            self.device.destroy_device(None);
            self.instance.destroy_instance(None);
        }
    }
}

/// A buffer with its own memory; host-visible ones stay mapped.
pub(crate) struct Buffer {
    pub(crate) buffer: vk::Buffer,
    memory: vk::DeviceMemory,
    /// Its size (the bytes asked for, rounded up to a multiple of 4).
    pub(crate) bytes: u64,
    /// The mapping of a host-visible buffer, else null.
    mapped: *mut u8,
}

// SAFETY: the handles are plain identifiers; the mapping is only touched
// by the session that owns the buffer.
unsafe impl Send for Buffer {}

impl Buffer {
    /// The mapped bytes of a host-visible buffer.
    pub(crate) fn host_bytes(&mut self) -> &mut [u8] {
        assert!(
            !self.mapped.is_null(),
            "a device-local buffer is not mapped"
        );
        // SAFETY: the mapping covers the whole buffer while it lives.
        unsafe { std::slice::from_raw_parts_mut(self.mapped, self.bytes as usize) }
    }

    pub(crate) fn destroy(self, device: &Device) {
        // SAFETY: the buffer is no longer used by queued work (callers
        // wait for the session's fence first).
        unsafe {
            device.device.destroy_buffer(self.buffer, None);
            device.device.free_memory(self.memory, None);
        }
    }
}

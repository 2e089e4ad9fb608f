//! OpenCL device discovery and selection.
//!
//! Devices are numbered globally across platforms in the order the ICD
//! loader lists them; `--device=N` / `TCC_DEVICE=N` pick by that index, any
//! other text picks the first device whose name, platform name or platform
//! version contains it (case-insensitive), and the default is the first GPU,
//! else the first CPU device (PoCL on machines without a GPU driver).

use std::fmt;

use opencl3::device::{
    CL_DEVICE_TYPE_ACCELERATOR, CL_DEVICE_TYPE_ALL, CL_DEVICE_TYPE_CPU, CL_DEVICE_TYPE_GPU, Device,
};
use opencl3::error_codes::{
    CL_DEVICE_NOT_FOUND, CL_PLATFORM_NOT_FOUND_KHR, DLOPEN_RUNTIME_LOAD_FAILED,
};
use opencl3::platform::get_platforms;
use serde::Serialize;

use crate::error::{ClResultExt, Error, Result};

/// Environment variable consulted when no `--device` is given.
pub const DEVICE_ENV: &str = "TCC_DEVICE";

/// Kind of device, from `CL_DEVICE_TYPE`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum DeviceKind {
    Gpu,
    Cpu,
    Accelerator,
    Other,
}

impl fmt::Display for DeviceKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            DeviceKind::Gpu => "GPU",
            DeviceKind::Cpu => "CPU",
            DeviceKind::Accelerator => "accelerator",
            DeviceKind::Other => "other",
        })
    }
}

/// What the runtime knows about one device.
#[derive(Clone, Debug, Serialize)]
pub struct DeviceInfo {
    /// Global index across platforms, as used by `--device=N`.
    pub index: usize,
    pub platform_name: String,
    pub platform_version: String,
    pub name: String,
    pub kind: DeviceKind,
    /// `CL_DEVICE_OPENCL_C_VERSION`, e.g. "OpenCL C 1.2 PoCL".
    pub opencl_c_version: String,
    /// `CL_DEVICE_IL_VERSION` (e.g. "SPIR-V_1.2"); `None` when the device
    /// takes no intermediate language (no SPIR-V).
    pub il_version: Option<String>,
    /// `cl_khr_fp16` is among the device's extensions.
    pub fp16: bool,
    /// `cl_khr_fp64` is among the device's extensions (f64 kernels need it).
    pub fp64: bool,
    pub compute_units: u32,
    pub global_mem_bytes: u64,
    pub local_mem_bytes: u64,
    pub max_alloc_bytes: u64,
    /// `CL_DEVICE_MEM_BASE_ADDR_ALIGN` in bytes: sub-buffer offsets must be
    /// multiples of it.
    pub base_align_bytes: u64,
    /// `CL_DEVICE_HOST_UNIFIED_MEMORY`: the device and the host share one
    /// memory (CPU devices, integrated GPUs).
    pub host_unified_memory: bool,
    pub max_work_group_size: usize,
    pub driver_version: String,
    #[serde(skip)]
    pub(crate) device: Device,
    /// Set on a part of a partitioned device ([`crate::partition_device`]):
    /// keeps the sub-device alive while a runtime uses it.
    #[serde(skip)]
    pub(crate) sub_device: Option<std::sync::Arc<opencl3::device::SubDevice>>,
}

impl DeviceInfo {
    pub(crate) fn query(
        index: usize,
        platform_name: &str,
        platform_version: &str,
        device: Device,
    ) -> Result<Self> {
        let q = "clGetDeviceInfo";
        let kind_bits = device.dev_type().cl(q)?;
        let kind = if kind_bits & CL_DEVICE_TYPE_GPU != 0 {
            DeviceKind::Gpu
        } else if kind_bits & CL_DEVICE_TYPE_CPU != 0 {
            DeviceKind::Cpu
        } else if kind_bits & CL_DEVICE_TYPE_ACCELERATOR != 0 {
            DeviceKind::Accelerator
        } else {
            DeviceKind::Other
        };
        let il_version = device
            .il_version()
            .ok()
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty());
        let extensions = device.extensions().unwrap_or_default();
        Ok(DeviceInfo {
            index,
            platform_name: platform_name.to_string(),
            platform_version: platform_version.to_string(),
            name: device.name().cl(q)?.trim().to_string(),
            kind,
            opencl_c_version: device
                .opencl_c_version()
                .unwrap_or_default()
                .trim()
                .to_string(),
            il_version,
            fp16: extensions.split_whitespace().any(|e| e == "cl_khr_fp16"),
            fp64: extensions.split_whitespace().any(|e| e == "cl_khr_fp64"),
            compute_units: device.max_compute_units().cl(q)?,
            global_mem_bytes: device.global_mem_size().cl(q)?,
            local_mem_bytes: device.local_mem_size().cl(q)?,
            max_alloc_bytes: device.max_mem_alloc_size().cl(q)?,
            base_align_bytes: (u64::from(device.mem_base_addr_align().cl(q)?) / 8).max(1),
            host_unified_memory: device.host_unified_memory().unwrap_or(false),
            max_work_group_size: device.max_work_group_size().cl(q)?,
            driver_version: device
                .driver_version()
                .unwrap_or_default()
                .trim()
                .to_string(),
            device,
            sub_device: None,
        })
    }

    /// How a call's host tensors reach this device (see [`host_io_for`]).
    pub fn host_io(&self) -> HostIo {
        host_io_for(self.kind, self.host_unified_memory)
    }

    /// One line: `0: <name> [CPU] on <platform>` (`0 (part, 1 compute
    /// unit): ...` for a part of a partitioned device).
    pub fn summary(&self) -> String {
        let part = if self.is_sub_device() {
            format!(" (part, {} compute units)", self.compute_units)
        } else {
            String::new()
        };
        format!(
            "{}{part}: {} [{}] on {}",
            self.index, self.name, self.kind, self.platform_name
        )
    }

    /// Whether this is a part of a partitioned device.
    pub fn is_sub_device(&self) -> bool {
        self.sub_device.is_some()
    }

    fn matches(&self, needle: &str) -> bool {
        let needle = needle.to_lowercase();
        [&self.name, &self.platform_name, &self.platform_version]
            .iter()
            .any(|s| s.to_lowercase().contains(&needle))
    }
}

/// How `Session::run` moves a call's host tensors (inputs, outputs) and a
/// model's constants to and from a device.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum HostIo {
    /// Copy them into device buffers and back (`clEnqueueWriteBuffer` /
    /// `clEnqueueReadBuffer`): devices with memory of their own.
    Copy,
    /// Hand the device the host memory itself (`CL_MEM_USE_HOST_PTR`, read
    /// back through a map that moves no bytes) wherever the host pointer
    /// has the device's `CL_DEVICE_MEM_BASE_ADDR_ALIGN`; copy the rest.
    InPlace,
}

/// The decision: devices whose memory is the host's memory (a CPU device,
/// or `CL_DEVICE_HOST_UNIFIED_MEMORY`) use host tensors in place; the
/// others (discrete GPUs) copy.
pub fn host_io_for(kind: DeviceKind, host_unified_memory: bool) -> HostIo {
    if kind == DeviceKind::Cpu || host_unified_memory {
        HostIo::InPlace
    } else {
        HostIo::Copy
    }
}

/// Lists every device of every platform, in global index order.
pub fn list_devices() -> Result<Vec<DeviceInfo>> {
    // PoCL 3/5 initialise their devices on the first clGetDeviceIDs; when
    // several threads of one process do that at once, one of them can see
    // the platform without a device (measured: 1 run in 6 of the runtime
    // tests, which create runtimes on parallel threads). One discovery at
    // a time.
    static DISCOVERY: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _one_at_a_time = DISCOVERY
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let platforms = match get_platforms() {
        Ok(p) => p,
        Err(e) if e.0 == DLOPEN_RUNTIME_LOAD_FAILED => {
            return Err(Error::NoPlatform(
                "the OpenCL ICD loader libOpenCL.so could not be loaded".into(),
            ));
        }
        Err(e) if e.0 == CL_PLATFORM_NOT_FOUND_KHR => {
            return Err(Error::NoPlatform(
                "the OpenCL ICD loader lists no platform".into(),
            ));
        }
        Err(e) => return Err(Error::cl("clGetPlatformIDs", e)),
    };
    if platforms.is_empty() {
        return Err(Error::NoPlatform(
            "the OpenCL ICD loader lists no platform".into(),
        ));
    }
    let mut devices = Vec::new();
    for platform in platforms {
        let name = platform.name().cl("clGetPlatformInfo")?.trim().to_string();
        let version = platform.version().unwrap_or_default().trim().to_string();
        let ids = match platform.get_devices(CL_DEVICE_TYPE_ALL) {
            Ok(ids) => ids,
            Err(e) if e.0 == CL_DEVICE_NOT_FOUND => Vec::new(),
            Err(e) => return Err(Error::cl(format!("clGetDeviceIDs on platform {name}"), e)),
        };
        for id in ids {
            devices.push(DeviceInfo::query(
                devices.len(),
                &name,
                &version,
                Device::new(id),
            )?);
        }
    }
    if devices.is_empty() {
        return Err(Error::NoPlatform(
            "OpenCL platforms are installed but they expose no device".into(),
        ));
    }
    Ok(devices)
}

/// How to choose a device.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum DeviceSelector {
    /// The first GPU, else the first CPU device, else the first device.
    #[default]
    Default,
    /// Global index in `list_devices()` order.
    Index(usize),
    /// Case-insensitive substring of the device name, platform name or
    /// platform version.
    Name(String),
}

impl DeviceSelector {
    /// `"2"` → `Index(2)`, `""` → `Default`, anything else → `Name`.
    pub fn parse(s: &str) -> Self {
        let s = s.trim();
        if s.is_empty() {
            DeviceSelector::Default
        } else if let Ok(i) = s.parse::<usize>() {
            DeviceSelector::Index(i)
        } else {
            DeviceSelector::Name(s.to_string())
        }
    }

    /// The `--device` flag if given, else `TCC_DEVICE`, else `Default`.
    pub fn from_flag_or_env(flag: Option<&str>) -> Self {
        match flag {
            Some(f) => Self::parse(f),
            None => std::env::var(DEVICE_ENV)
                .map(|v| Self::parse(&v))
                .unwrap_or_default(),
        }
    }

    /// Picks a device from `devices` (as returned by `list_devices`).
    pub fn select(&self, devices: &[DeviceInfo]) -> Result<DeviceInfo> {
        let found = match self {
            DeviceSelector::Default => devices
                .iter()
                .find(|d| d.kind == DeviceKind::Gpu)
                .or_else(|| devices.iter().find(|d| d.kind == DeviceKind::Cpu))
                .or_else(|| devices.first()),
            DeviceSelector::Index(i) => devices.get(*i),
            DeviceSelector::Name(n) => devices.iter().find(|d| d.matches(n)),
        };
        found.cloned().ok_or_else(|| Error::NoSuchDevice {
            selector: self.to_string(),
            available: devices
                .iter()
                .map(|d| format!("  {}", d.summary()))
                .collect::<Vec<_>>()
                .join("\n"),
        })
    }
}

impl fmt::Display for DeviceSelector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DeviceSelector::Default => f.write_str("the default (first GPU, else first CPU)"),
            DeviceSelector::Index(i) => write!(f, "index {i}"),
            DeviceSelector::Name(n) => write!(f, "\"{n}\""),
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A device description for tests (no OpenCL device behind it).
    pub(crate) fn fake(index: usize, name: &str, kind: DeviceKind) -> DeviceInfo {
        DeviceInfo {
            index,
            platform_name: "Portable Computing Language".into(),
            platform_version: "OpenCL 3.0 PoCL 3.1".into(),
            name: name.into(),
            kind,
            opencl_c_version: "OpenCL C 1.2".into(),
            il_version: None,
            fp16: false,
            fp64: true,
            compute_units: 1,
            global_mem_bytes: 1,
            local_mem_bytes: 1,
            max_alloc_bytes: 1,
            base_align_bytes: 128,
            host_unified_memory: false,
            max_work_group_size: 1,
            driver_version: "1".into(),
            device: Device::new(std::ptr::null_mut()),
            sub_device: None,
        }
    }

    #[test]
    fn host_memory_devices_use_host_tensors_in_place_and_gpus_copy() {
        assert_eq!(host_io_for(DeviceKind::Cpu, true), HostIo::InPlace);
        // A CPU device is host memory whatever it reports.
        assert_eq!(host_io_for(DeviceKind::Cpu, false), HostIo::InPlace);
        // A discrete GPU (NVIDIA reports no unified memory) keeps copying.
        assert_eq!(host_io_for(DeviceKind::Gpu, false), HostIo::Copy);
        assert_eq!(host_io_for(DeviceKind::Accelerator, false), HostIo::Copy);
        // An integrated GPU shares the host's memory.
        assert_eq!(host_io_for(DeviceKind::Gpu, true), HostIo::InPlace);
        let mut gpu = fake(0, "H100", DeviceKind::Gpu);
        assert_eq!(gpu.host_io(), HostIo::Copy);
        gpu.kind = DeviceKind::Cpu;
        assert_eq!(gpu.host_io(), HostIo::InPlace);
    }

    #[test]
    fn parse_selectors() {
        assert_eq!(DeviceSelector::parse("1"), DeviceSelector::Index(1));
        assert_eq!(DeviceSelector::parse(" "), DeviceSelector::Default);
        assert_eq!(
            DeviceSelector::parse("NVIDIA"),
            DeviceSelector::Name("NVIDIA".into())
        );
        assert_eq!(
            DeviceSelector::from_flag_or_env(Some("0")),
            DeviceSelector::Index(0)
        );
    }

    #[test]
    fn selection_rules() {
        let devs = vec![
            fake(0, "cpu-a", DeviceKind::Cpu),
            fake(1, "Big GPU", DeviceKind::Gpu),
        ];
        assert_eq!(DeviceSelector::Default.select(&devs).unwrap().index, 1);
        assert_eq!(DeviceSelector::Default.select(&devs[..1]).unwrap().index, 0);
        assert_eq!(DeviceSelector::Index(0).select(&devs).unwrap().index, 0);
        assert_eq!(
            DeviceSelector::Name("big gpu".into())
                .select(&devs)
                .unwrap()
                .index,
            1
        );
        assert_eq!(
            DeviceSelector::Name("pocl".into())
                .select(&devs)
                .unwrap()
                .index,
            0
        );
        let e = DeviceSelector::Index(5)
            .select(&devs)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("index 5") && e.contains("1: Big GPU [GPU]"),
            "{e}"
        );
        assert!(DeviceSelector::Name("tpu".into()).select(&devs).is_err());
    }
}

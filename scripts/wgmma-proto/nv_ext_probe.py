"""Lists the vendor entry points NVIDIA's OpenCL library exports (names
ending in NV, and strings about kernel attributes or shared memory), and
whether clGetExtensionFunctionAddressForPlatform resolves each name. Used
to find out what the undocumented `cl_nv_kernel_attribute` extension
offers (a way past OpenCL's 48 KiB of local memory would sit there)."""
import ctypes, re, subprocess, sys

def find_lib():
    out = subprocess.run(["ldconfig", "-p"], capture_output=True, text=True).stdout
    for line in out.splitlines():
        if "libnvidia-opencl.so" in line:
            return line.split("=>")[-1].strip()
    sys.exit("no libnvidia-opencl.so")

lib = find_lib()
data = open(lib, "rb").read()
strings = set(m.decode() for m in re.findall(rb"[\x20-\x7e]{4,}", data))
fn_names = sorted(s for s in strings if re.fullmatch(r"cl[A-Z]\w*NV", s))
print("library:", lib)
print("cl*NV names:", fn_names)
interesting = sorted(s for s in strings if re.search(r"(?i)kernel_attribute|KERNEL_ATTRIBUTE|dynamic.?shared|SHARED_SIZE|CARVEOUT|_NV\b", s) and len(s) < 120)
print("strings:")
for s in interesting[:200]:
    print("  ", s)

cl = ctypes.CDLL("libOpenCL.so.1")
cl.clGetExtensionFunctionAddressForPlatform.restype = ctypes.c_void_p
cl.clGetExtensionFunctionAddressForPlatform.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
n = ctypes.c_uint()
cl.clGetPlatformIDs(0, None, ctypes.byref(n))
plats = (ctypes.c_void_p * n.value)()
cl.clGetPlatformIDs(n.value, plats, None)
for p in plats:
    name = ctypes.create_string_buffer(256)
    cl.clGetPlatformInfo(ctypes.c_void_p(p), 0x0902, 256, name, None)
    if b"NVIDIA" not in name.value:
        continue
    for f in fn_names + ["clSetKernelAttributeNV", "clGetKernelAttributeNV", "clSetKernelExecInfoNV"]:
        addr = cl.clGetExtensionFunctionAddressForPlatform(ctypes.c_void_p(p), f.encode())
        print("resolve", f, hex(addr) if addr else None)

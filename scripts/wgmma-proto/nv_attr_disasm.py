"""Disassembles NVIDIA's OpenCL entry points clSetKernelAttributeNV and
clGetKernelAttributeNV (found by nv_ext_probe.py; not documented) so that
their parameters and accepted attribute values can be read off."""
import ctypes, subprocess, sys
lib = sys.argv[1]
n = int(sys.argv[2], 0) if len(sys.argv) > 2 else 0x180
cl = ctypes.CDLL("libOpenCL.so.1")
cl.clGetExtensionFunctionAddressForPlatform.restype = ctypes.c_void_p
cl.clGetExtensionFunctionAddressForPlatform.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
cnt = ctypes.c_uint()
cl.clGetPlatformIDs(0, None, ctypes.byref(cnt))
plats = (ctypes.c_void_p * cnt.value)()
cl.clGetPlatformIDs(cnt.value, plats, None)
addrs = {}
for p in plats:
    for f in ["clSetKernelAttributeNV", "clGetKernelAttributeNV"]:
        a = cl.clGetExtensionFunctionAddressForPlatform(ctypes.c_void_p(p), f.encode())
        if a: addrs[f] = a
base = None
for line in open("/proc/self/maps"):
    parts = line.split()
    if len(parts) >= 6 and "libnvidia-opencl.so" in parts[5] and int(parts[2], 16) == 0:
        base = int(parts[0].split("-")[0], 16); lib = parts[5]; break
print("base", hex(base))
for f, a in addrs.items():
    off = a - base
    print("====", f, hex(off))
    out = subprocess.run(["objdump", "-d", "--no-show-raw-insn", f"--start-address={off}", f"--stop-address={off+n}", lib], capture_output=True, text=True)
    print("\n".join(l for l in out.stdout.splitlines() if "\t" in l))
    print(out.stderr[-500:])

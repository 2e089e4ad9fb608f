// Layer norm written in primitive TOSA ops, as other producers emit it:
// mean = reduce_sum * (1/N), variance of the centred values through
// pow(d, 2) (first) or d * d (second), rsqrt(var + epsilon), then gamma and
// beta (first only). tcc-raise-composites makes both tcc.layer_norm (one
// row kernel each). The third is a near miss that stays primitive ops: an
// unbiased variance (1/(N-1)). Input 6x96 and 5x40.
// Reductions of 96 and 40 elements, rsqrt (2 ulp in OpenCL): outputs are
// O(1), errors a few 1e-6.
// TOLERANCE: 1e-5 1e-4
func.func @layer_norm_primitive(%x: tensor<6x96xf32>, %z: tensor<5x40xf32>) -> (tensor<6x96xf32>, tensor<6x96xf32>, tensor<5x40xf32>) {
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %g = "tosa.const"() <{values = dense<[[0.5042, 1.4109, 1.4131, 1.4093, 1.2910, 1.0809, 0.9153, 1.1238, 0.6159, 1.2688, 0.5506, 0.7639, 0.9015, 1.2515, 1.1115, 1.4894, 0.9990, 0.9247, 1.4950, 0.6402, 0.8913, 0.9146, 1.2127, 1.4572, 0.6158, 1.2787, 1.0329, 1.3840, 1.4076, 1.4027, 0.9317, 0.6714, 0.5784, 0.5181, 0.7543, 0.5207, 1.4583, 1.2159, 1.4496, 1.1094, 0.7806, 1.0957, 0.8167, 0.7329, 1.4837, 1.4696, 0.7387, 0.5742, 1.2030, 0.8179, 0.7969, 0.6715, 1.4734, 1.0912, 1.0773, 0.6922, 0.5585, 1.3485, 0.8496, 0.6445, 0.7350, 1.0267, 0.9774, 0.6565, 0.7632, 0.9311, 0.6199, 0.9976, 1.2278, 0.8776, 0.6744, 0.5118, 1.2453, 0.7127, 0.6969, 1.3459, 1.1879, 0.5600, 0.5686, 1.4142, 1.3849, 1.0595, 1.0286, 0.9862, 0.9736, 1.4233, 0.8818, 1.3655, 0.9603, 0.5798, 1.1718, 1.3589, 1.0268, 1.3042, 0.5940, 0.6729]]> : tensor<1x96xf32>}> : () -> tensor<1x96xf32>
  %b = "tosa.const"() <{values = dense<[[0.1432, -0.0061, 0.1891, -0.0375, -0.1411, -0.1421, 0.1110, 0.0421, 0.1833, 0.1814, 0.1057, 0.0652, 0.1757, 0.1799, -0.0379, 0.0467, 0.0761, 0.0534, -0.1339, 0.1065, 0.0534, 0.0140, -0.1459, -0.1545, 0.0072, 0.0673, -0.0680, -0.0332, -0.1794, -0.1722, -0.0726, -0.1810, -0.0343, -0.1295, 0.1640, 0.1927, 0.1046, 0.1618, -0.0087, -0.0049, 0.0875, 0.0507, -0.1269, -0.1107, -0.0616, -0.0883, -0.1202, -0.0897, -0.1132, 0.0238, 0.0533, 0.1498, -0.1868, 0.0518, 0.0789, 0.1186, 0.0756, 0.0045, -0.0971, -0.1107, -0.0308, 0.0225, 0.1674, -0.1062, 0.1819, -0.0923, -0.1822, 0.1864, -0.1370, 0.1977, -0.0460, -0.1443, 0.1940, -0.1621, 0.1023, 0.1510, 0.1430, 0.1328, 0.1123, 0.1737, 0.1268, -0.1435, -0.1703, 0.0900, 0.1747, -0.0190, 0.0704, 0.0038, -0.1392, 0.0284, -0.0877, -0.1631, 0.0700, 0.0097, 0.0555, 0.1916]]> : tensor<1x96xf32>}> : () -> tensor<1x96xf32>
  %n = "tosa.const"() <{values = dense<0.010416667> : tensor<1x1xf32>}> : () -> tensor<1x1xf32>
  %eps = "tosa.const"() <{values = dense<1.0e-05> : tensor<1x1xf32>}> : () -> tensor<1x1xf32>
  %two = "tosa.const"() <{values = dense<2.0> : tensor<1x1xf32>}> : () -> tensor<1x1xf32>
  %s1 = tosa.reduce_sum %x {axis = 1 : i32} : (tensor<6x96xf32>) -> tensor<6x1xf32>
  %mean = tosa.mul %s1, %n, %shift : (tensor<6x1xf32>, tensor<1x1xf32>, tensor<1xi8>) -> tensor<6x1xf32>
  %d = tosa.sub %x, %mean : (tensor<6x96xf32>, tensor<6x1xf32>) -> tensor<6x96xf32>
  %sq = tosa.pow %d, %two : (tensor<6x96xf32>, tensor<1x1xf32>) -> tensor<6x96xf32>
  %s2 = tosa.reduce_sum %sq {axis = 1 : i32} : (tensor<6x96xf32>) -> tensor<6x1xf32>
  %var = tosa.mul %n, %s2, %shift : (tensor<1x1xf32>, tensor<6x1xf32>, tensor<1xi8>) -> tensor<6x1xf32>
  %ve = tosa.add %var, %eps : (tensor<6x1xf32>, tensor<1x1xf32>) -> tensor<6x1xf32>
  %rs = tosa.rsqrt %ve : (tensor<6x1xf32>) -> tensor<6x1xf32>
  %norm = tosa.mul %d, %rs, %shift : (tensor<6x96xf32>, tensor<6x1xf32>, tensor<1xi8>) -> tensor<6x96xf32>
  %scaled = tosa.mul %norm, %g, %shift : (tensor<6x96xf32>, tensor<1x96xf32>, tensor<1xi8>) -> tensor<6x96xf32>
  %y1 = tosa.add %b, %scaled : (tensor<1x96xf32>, tensor<6x96xf32>) -> tensor<6x96xf32>

  %t1 = tosa.reduce_sum %y1 {axis = 1 : i32} : (tensor<6x96xf32>) -> tensor<6x1xf32>
  %tmean = tosa.mul %t1, %n, %shift : (tensor<6x1xf32>, tensor<1x1xf32>, tensor<1xi8>) -> tensor<6x1xf32>
  %td = tosa.sub %y1, %tmean : (tensor<6x96xf32>, tensor<6x1xf32>) -> tensor<6x96xf32>
  %tsq = tosa.mul %td, %td, %shift : (tensor<6x96xf32>, tensor<6x96xf32>, tensor<1xi8>) -> tensor<6x96xf32>
  %t2 = tosa.reduce_sum %tsq {axis = 1 : i32} : (tensor<6x96xf32>) -> tensor<6x1xf32>
  %tvar = tosa.mul %t2, %n, %shift : (tensor<6x1xf32>, tensor<1x1xf32>, tensor<1xi8>) -> tensor<6x1xf32>
  %eps2 = "tosa.const"() <{values = dense<1.0e-03> : tensor<1x1xf32>}> : () -> tensor<1x1xf32>
  %tve = tosa.add %tvar, %eps2 : (tensor<6x1xf32>, tensor<1x1xf32>) -> tensor<6x1xf32>
  %trs = tosa.rsqrt %tve : (tensor<6x1xf32>) -> tensor<6x1xf32>
  %y2 = tosa.mul %trs, %td, %shift : (tensor<6x1xf32>, tensor<6x96xf32>, tensor<1xi8>) -> tensor<6x96xf32>

  %nz = "tosa.const"() <{values = dense<2.500000e-02> : tensor<1x1xf32>}> : () -> tensor<1x1xf32>
  %nz1 = "tosa.const"() <{values = dense<0.025641026> : tensor<1x1xf32>}> : () -> tensor<1x1xf32>
  %u1 = tosa.reduce_sum %z {axis = 1 : i32} : (tensor<5x40xf32>) -> tensor<5x1xf32>
  %umean = tosa.mul %u1, %nz, %shift : (tensor<5x1xf32>, tensor<1x1xf32>, tensor<1xi8>) -> tensor<5x1xf32>
  %ud = tosa.sub %z, %umean : (tensor<5x40xf32>, tensor<5x1xf32>) -> tensor<5x40xf32>
  %usq = tosa.mul %ud, %ud, %shift : (tensor<5x40xf32>, tensor<5x40xf32>, tensor<1xi8>) -> tensor<5x40xf32>
  %u2 = tosa.reduce_sum %usq {axis = 1 : i32} : (tensor<5x40xf32>) -> tensor<5x1xf32>
  %uvar = tosa.mul %u2, %nz1, %shift : (tensor<5x1xf32>, tensor<1x1xf32>, tensor<1xi8>) -> tensor<5x1xf32>
  %uve = tosa.add %uvar, %eps : (tensor<5x1xf32>, tensor<1x1xf32>) -> tensor<5x1xf32>
  %urs = tosa.rsqrt %uve : (tensor<5x1xf32>) -> tensor<5x1xf32>
  %y3 = tosa.mul %ud, %urs, %shift : (tensor<5x40xf32>, tensor<5x1xf32>, tensor<1xi8>) -> tensor<5x40xf32>
  return %y1, %y2, %y3 : tensor<6x96xf32>, tensor<6x96xf32>, tensor<5x40xf32>
}

// Layer norms over many short rows, as over the channels of a
// channels-last image (ConvNeXt): on the nvidia target several rows share
// a work-group (`#tcc.layer_norm<workgroup_size = W, rows = R>`), whose
// last group covers rows past the kernel's (computed on the last row,
// not stored). 3x19x23 = 1311 rows (not a multiple of any group's rows)
// of 40 and of 200 channels (4 work-items of 10 columns, 64 rows a group;
// 16 of 13 columns, 16 rows).
// TOLERANCE: 1e-5 1e-5
func.func @packed_rows(%x: tensor<3x19x23x40xf32>, %g: tensor<40xf32>, %b: tensor<40xf32>, %y: tensor<3x19x23x200xf32>, %h: tensor<200xf32>, %c: tensor<200xf32>) -> (tensor<3x19x23x40xf32>, tensor<3x19x23x200xf32>) {
  %0 = tcc.layer_norm %x, %g, %b axis = -1 epsilon = 1.0e-06 : tensor<3x19x23x40xf32>, tensor<40xf32>
  %1 = tcc.layer_norm %y, %h, %c axis = -1 epsilon = 1.0e-05 : tensor<3x19x23x200xf32>, tensor<200xf32>
  return %0, %1 : tensor<3x19x23x40xf32>, tensor<3x19x23x200xf32>
}

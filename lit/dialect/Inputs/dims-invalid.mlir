// expected-error @+1 {{#tcc.dims names 'batch' twice}}
module attributes {tcc.dims = #tcc.dims<names = ["batch", "batch"], min = [1, 1], max = [8, 8]>} {}

// -----

// expected-error @+1 {{the range of 'batch' must satisfy 1 <= min <= max <= 2147483647, got 9..3}}
module attributes {tcc.dims = #tcc.dims<names = ["batch"], min = [9], max = [3]>} {}

// -----

// expected-error @+1 {{the range of 'batch' must satisfy 1 <= min <= max <= 2147483647, got 0..3}}
module attributes {tcc.dims = #tcc.dims<names = ["batch"], min = [0], max = [3]>} {}

// -----

// expected-error @+1 {{#tcc.dims has 1 names but 2 minimums and 1 maximums}}
module attributes {tcc.dims = #tcc.dims<names = ["batch"], min = [1, 2], max = [3]>} {}

// -----

// expected-error @+1 {{every name must be a non-empty string}}
module attributes {tcc.dims = #tcc.dims<names = [""], min = [1], max = [3]>} {}

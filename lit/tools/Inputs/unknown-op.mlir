func.func @f() {
  "tcc.frobnicate"() : () -> ()
  return
}

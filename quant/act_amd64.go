package quant

//go:noescape
func quantQ8_0AVX2(x *float32, nb int, qs, nqs *byte, amax *float32, nsum *int32)

//go:noescape
func quantQ8_KAVX2(x *float32, nb int, qs *byte, d *float32, nbs *int32)

// quantize sets column c from k floats at level l: the assembly quantizer
// at the SIMD levels, quantizeGoBlocks at LevelGeneric (the same bytes).
func (a *q8Act) quantize(l Level, c int, x []float32) {
	a.quantizeBlocks(l, c, 0, a.k/QK8_0, x)
}

// quantizeBlocks is quantize on Q8_0 blocks [b0, b1) of column c alone (x
// is the column's k floats); calls on disjoint ranges may run
// concurrently.
func (a *q8Act) quantizeBlocks(l Level, c, b0, b1 int, x []float32) {
	if b0 >= b1 {
		return
	}
	if l == LevelGeneric {
		a.quantizeGoBlocks(c, b0, b1, x)
		return
	}
	nb := a.k / QK8_0
	_ = x[b1*QK8_0-1]
	i := c*nb + b0
	_ = a.qs[(c*nb+b1)*QK8_0-1]
	_ = a.nqs[(c*nb+b1)*QK8_0-1]
	dy := a.dy[i : c*nb+b1]
	quantQ8_0AVX2(&x[b0*QK8_0], b1-b0, &a.qs[i*QK8_0], &a.nqs[i*QK8_0], &dy[0], &a.nsum[i])
	for b, amax := range dy {
		dy[b] = FP16ToFP32(softFP32ToFP16(amax / 127))
	}
}

// quantize sets column c from k floats at level l (see q8Act.quantize); the
// assembly path fills no raw blocks (its columns are exact).
func (a *q8KAct) quantize(l Level, c int, x []float32) {
	if l == LevelGeneric {
		a.quantizeGo(c, x)
		return
	}
	nb := a.k / QK_K
	_ = x[a.k-1]
	i := c * nb
	_ = a.qs[(c+1)*a.k-1]
	_ = a.d[i+nb-1]
	_ = a.nb[8*(i+nb)-1]
	quantQ8_KAVX2(&x[0], nb, &a.qs[c*a.k], &a.d[i], &a.nb[8*i])
	a.exact[c] = true
}

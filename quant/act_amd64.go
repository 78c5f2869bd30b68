package quant

//go:noescape
func quantQ8_0AVX2(x *float32, nb int, qs, nqs *byte, amax *float32, nsum *int32)

//go:noescape
func quantQ8_KAVX2(x *float32, nb int, qs *byte, d *float32, nbs *int32)

// quantize sets column c from k floats at level l: the assembly quantizer
// at the SIMD levels, quantizeGo at LevelGeneric (the same bytes).
func (a *q8Act) quantize(l Level, c int, x []float32) {
	if l == LevelGeneric {
		a.quantizeGo(c, x)
		return
	}
	nb := a.k / QK8_0
	_ = x[a.k-1]
	i := c * nb
	_ = a.qs[(c+1)*a.k-1]
	_ = a.nqs[(c+1)*a.k-1]
	dy := a.dy[i : i+nb]
	quantQ8_0AVX2(&x[0], nb, &a.qs[c*a.k], &a.nqs[c*a.k], &dy[0], &a.nsum[i])
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

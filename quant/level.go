package quant

import "github.com/bankml/bankml/gguf"

// VecDotF16 is ggml_vec_dot_f16 of the haswell variant on this level's
// kernels (VecDotF16 is the portable twin): x and y hold n = len(x) f16
// values (len(y) >= n).
func (l Level) VecDotF16(x, y []uint16) float32 {
	return vecDotF16(l, x, y)
}

// FP32ToFP16Row is FP32ToFP16Row (ggml_cpu_fp32_to_fp16, round to nearest
// even) on this level: F16C's vcvtps2ph $0, eight values at a time, at
// LevelAVX2 and LevelAVX512 (the haswell build's vector loop), the portable
// FP32ToFP16 for the rest and at LevelGeneric. Every level writes the same
// bits for every input, NaN payloads included (FP32ToFP16 follows F16C).
// len(dst) >= len(x); it panics otherwise.
func (l Level) FP32ToFP16Row(x []float32, dst []uint16) {
	fp32ToFP16Row(l, x, dst)
}

// VecDotRows returns VecDot(typ) over many rows at l: out[r] =
// VecDot(typ)(row r, a, nb) for r < len(out), row r being the nb blocks at
// w[r*rb:], each row's arithmetic exactly VecDot's (the multi-row kernels of
// Q8_0 and Q4_0 at the SIMD levels, else VecDot row by row); nil when VecDot
// is.
func (l Level) VecDotRows(typ gguf.GGMLType) func(w []byte, rb int, a []byte, nb int, out []float32) {
	if rd := rowsDot(l, typ); rd != nil {
		return rd
	}
	dot := l.VecDot(typ)
	if dot == nil {
		return nil
	}
	return func(w []byte, rb int, a []byte, nb int, out []float32) {
		n := nb * typ.TypeSize()
		for r := range out {
			out[r] = dot(w[r*rb:r*rb+n], a, nb)
		}
	}
}

// VecDot returns typ's vec_dot against its activation format (as
// blockKernels lists it: Q8_0, Q8_1 or Q8_K blocks) as this level computes
// it, nil for a type MatMul does not multiply block-wise. For Q1_0, Q2_0
// and TQ2_0 at the SIMD levels the row is packed (one group) and the
// activation row prepared on every call, then the packed tile runs: slow,
// meant for oracle tests and tools that check one row at a time. Q8_0 and
// Q4_0 at the SIMD levels run the level's assembly kernel (rowsDot) on the
// one row. The other types run the plain kernel at every level.
func (l Level) VecDot(typ gguf.GGMLType) func(w, a []byte, nb int) float32 {
	bk, ok := blockKernels[typ]
	if !ok {
		return nil
	}
	if rd := rowsDot(l, typ); rd != nil {
		return func(w, a []byte, nb int) float32 {
			var out [1]float32
			rd(w, 0, a, nb, out[:])
			return out[0]
		}
	}
	if l == LevelGeneric || !Packable(typ) {
		return bk.dot
	}
	return func(w, a []byte, nb int) float32 {
		p := packMatrix(typ, w, 1, nb)
		var out [16]float32
		switch typ {
		case gguf.Q1_0, gguf.Q2_0:
			var act q8Act
			act.reset(nb*typ.BlockSize(), 1)
			act.fromQ8_0(0, a)
			if typ == gguf.Q1_0 {
				act.fillLUT(l, 0, 1)
				tileQ1_0(l, p, 0, &act, 0, 1, out[:])
			} else {
				tileQ2_0(l, p.group(0), nb, &act, 0, 1, out[:])
			}
		case gguf.TQ2_0:
			var act q8KAct
			act.reset(nb*QK_K, 1)
			act.fromQ8_K(0, a)
			if !act.exact[0] {
				return bk.dot(w, a, nb)
			}
			tileTQ2_0(l, p.group(0), nb, &act, 0, 1, out[:], nil)
		}
		return out[0]
	}
}

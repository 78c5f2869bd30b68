package quant

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/bankml/bankml/gguf"
	"github.com/bankml/bankml/parallel"
)

// weightsOf makes rows×cols weights of type t from random floats (a type's
// own quantizer, or random blocks with a sane f16 scale where bankml has no
// quantizer for it).
func weightsOf(t *testing.T, r *rand.Rand, typ gguf.GGMLType, rows, cols int) []byte {
	t.Helper()
	row := make([]float32, cols)
	out := make([]byte, 0, rows*cols/typ.BlockSize()*typ.TypeSize())
	rb := cols / typ.BlockSize() * typ.TypeSize()
	for range rows {
		for i := range row {
			row[i] = float32(r.NormFloat64())
		}
		buf := make([]byte, rb)
		switch typ {
		case gguf.F32:
			for i, v := range row {
				bits := math.Float32bits(v)
				buf[4*i], buf[4*i+1], buf[4*i+2], buf[4*i+3] = byte(bits), byte(bits>>8), byte(bits>>16), byte(bits>>24)
			}
		case gguf.F16:
			for i, v := range row {
				h := FP32ToFP16(v)
				buf[2*i], buf[2*i+1] = byte(h), byte(h>>8)
			}
		case gguf.BF16:
			for i, v := range row {
				h := FP32ToBF16(v)
				buf[2*i], buf[2*i+1] = byte(h), byte(h>>8)
			}
		case gguf.Q8_0:
			QuantizeRowQ8_0(row, buf)
		case gguf.Q4_1:
			QuantizeRowQ4_1Ref(row, buf)
		case gguf.Q5_0:
			QuantizeRowQ5_0Ref(row, buf)
		case gguf.Q5_1:
			QuantizeRowQ5_1Ref(row, buf)
		case gguf.Q4_0:
			for i := range buf {
				buf[i] = byte(r.Uint32())
			}
			for b := 0; b < len(buf); b += BlockQ4_0Size {
				h := FP32ToFP16(float32(r.Float64()) * 0.1)
				buf[b], buf[b+1] = byte(h), byte(h>>8)
			}
		case gguf.Q1_0:
			QuantizeRowQ1_0(row, buf)
		case gguf.Q2_0:
			QuantizeRowQ2_0(row, buf)
		case gguf.TQ1_0:
			QuantizeTQ1_0Ref(row, buf)
		case gguf.TQ2_0:
			QuantizeTQ2_0Ref(row, buf)
		case gguf.Q2_K:
			QuantizeQ2_KRef(row, buf)
		case gguf.Q3_K:
			QuantizeQ3_KRef(row, buf)
		case gguf.Q4_K:
			QuantizeRowQ4_KRef(row, buf)
		case gguf.Q5_K:
			QuantizeRowQ5_KRef(row, buf)
		case gguf.Q6_K:
			QuantizeRowQ6_KRef(row, buf)
		default:
			t.Fatalf("no weights for %s", typ)
		}
		out = append(out, buf...)
	}
	return out
}

// TestMatMulMatchesReferenceGraphs: Work.MatMul at every CPU level this
// machine has, path selection included, equals ggml_mul_mat graphs computed
// by the reference (a plain context, so no repacking: Q4_0 is tested with a
// row count that is not a multiple of 8, the case it is not repacked in a
// model either) for every supported type, 12 and 40 rows, the column counts
// 1, 2, 3, 4, 5, 8, 16 and 64, at 1 and 2 threads; Q1_0, Q2_0 and TQ2_0 both
// as they are and Repack'ed (the packed tiles; 40 rows are two whole groups
// of 16 and a part).
func TestMatMulMatchesReferenceGraphs(t *testing.T) {
	k := kernels(t)
	r := rand.New(rand.NewPCG(21, 22))
	types := []gguf.GGMLType{gguf.F32, gguf.F16, gguf.BF16, gguf.Q8_0, gguf.Q4_0, gguf.Q4_1, gguf.Q5_0, gguf.Q5_1, gguf.Q1_0, gguf.Q2_0, gguf.TQ1_0, gguf.TQ2_0, gguf.Q2_K, gguf.Q3_K, gguf.Q4_K, gguf.Q5_K, gguf.Q6_K}
	levels := Levels()
	pools := []*parallel.Pool{parallel.New(1), parallel.New(2)}
	defer pools[0].Close()
	defer pools[1].Close()
	works := make([][]*Work, len(levels))
	for li, l := range levels {
		for _, p := range pools {
			w, err := NewWork(l, p)
			if err != nil {
				t.Fatal(err)
			}
			works[li] = append(works[li], w)
		}
	}
	for _, typ := range types {
		equal := make([][2]int, len(levels)) // [level][packed]
		total := make([][2]int, len(levels))
		for _, rows := range []int{12, 40} {
			if rows == 40 && !Packable(typ) {
				continue
			}
			cols := 512
			w := weightsOf(t, r, typ, rows, cols)
			plain := &Matrix{Name: typ.String(), Type: typ, Rows: rows, Cols: cols, Data: w}
			if err := plain.Supported(); err != nil {
				t.Fatal(err)
			}
			mats := []*Matrix{plain}
			if Packable(typ) {
				pk := *plain
				if _, err := pk.Repack(); err != nil {
					t.Fatal(err)
				}
				mats = append(mats, &pk)
			}
			for _, n := range []int{1, 2, 3, 4, 5, 8, 16, 64} {
				x := make([]float32, n*cols)
				for i := range x {
					x[i] = float32(r.NormFloat64())
				}
				for ti, threads := range []int{1, 2} {
					want, err := k.GraphMulMat(int32(typ), rows, cols, w, x, n, threads)
					if err != nil {
						t.Fatalf("%s: %v", typ, err)
					}
					got := make([]float32, n*rows)
					for li, l := range levels {
						for pi, m := range mats {
							clear(got)
							works[li][ti].MatMul(m, x, n, got)
							for i := range got {
								total[li][pi]++
								if math.Float32bits(got[i]) == math.Float32bits(want[i]) {
									equal[li][pi]++
								} else if total[li][pi]-equal[li][pi] <= 3 {
									t.Errorf("%s %s packed=%v rows=%d n=%d t=%d: out[%d] = %g, reference %g", l, typ, pi == 1, rows, n, threads, i, got[i], want[i])
								}
							}
						}
					}
				}
			}
		}
		for li, l := range levels {
			t.Logf("%s %s: %d/%d outputs", typ, l, equal[li][0], total[li][0])
			if Packable(typ) {
				t.Logf("%s %s repacked: %d/%d outputs", typ, l, equal[li][1], total[li][1])
			}
			for pi := range 2 {
				if equal[li][pi] != total[li][pi] {
					t.Errorf("%s %s packed=%v: %d of %d outputs differ", typ, l, pi == 1, total[li][pi]-equal[li][pi], total[li][pi])
				}
			}
		}
	}
}

// TestSupportedRefusesByName: types without kernels are named in the error.
func TestSupportedRefusesByName(t *testing.T) {
	for _, typ := range []gguf.GGMLType{gguf.IQ2_XXS, gguf.MXFP4} {
		m := &Matrix{Name: "w", Type: typ, Rows: 1, Cols: 256, Data: make([]byte, 1024)}
		err := m.Supported()
		if err == nil || !strings.Contains(err.Error(), typ.String()) {
			t.Errorf("%s: err = %v", typ, err)
		}
	}
}

// TestMatMulRepackedMatchesReference: Q4_0 and Q4_K weights with a row count
// that is a multiple of 8, placed in the reference's CPU_REPACK buffer as
// llama.cpp loads them, against quant.MatMul's repacked path, for 1 to 9, 16
// and 64 columns (gemv, gemm on groups of four, and the mix).
func TestMatMulRepackedMatchesReference(t *testing.T) {
	k := kernels(t)
	r := rand.New(rand.NewPCG(23, 24))
	for _, typ := range []gguf.GGMLType{gguf.Q4_0, gguf.Q4_K} {
		rows, cols := 16, 512
		w := weightsOf(t, r, typ, rows, cols)
		m := &Matrix{Name: typ.String(), Type: typ, Rows: rows, Cols: cols, Data: w}
		equal, total := 0, 0
		for _, n := range []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 16, 64} {
			x := make([]float32, n*cols)
			for i := range x {
				x[i] = float32(r.NormFloat64())
			}
			want, err := k.GraphMulMatK456(int32(typ), rows, cols, w, x, n, 1, true)
			if err != nil {
				t.Fatalf("%s: %v", typ, err)
			}
			got := make([]float32, n*rows)
			MatMul(m, x, n, got, nil)
			for i := range got {
				total++
				if math.Float32bits(got[i]) == math.Float32bits(want[i]) {
					equal++
				} else if total-equal <= 3 {
					t.Errorf("%s n=%d: out[%d] = %g, reference %g", typ, n, i, got[i], want[i])
				}
			}
		}
		t.Logf("%s repacked: %d/%d outputs", typ, equal, total)
	}
}

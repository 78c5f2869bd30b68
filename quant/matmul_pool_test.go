package quant

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/bankml/bankml/gguf"
	"github.com/bankml/bankml/parallel"
)

// TestMatMulIndependentOfWorkers: MatMul gives the same bits on pools of 1,
// 2, 3 and 8 workers (and on a nil pool) for every supported type, on row
// counts that are and are not multiples of 8 (the repacked paths and the
// vec_dot ones) and on 1, 3 and 8 columns (vec_dot, tinyBLAS, gemm groups).
func TestMatMulIndependentOfWorkers(t *testing.T) {
	types := []gguf.GGMLType{gguf.F32, gguf.F16, gguf.BF16}
	for typ := range blockKernels {
		types = append(types, typ)
	}
	slices.Sort(types)
	pools := map[int]*parallel.Pool{}
	for _, w := range []int{1, 2, 3, 8} {
		pools[w] = parallel.New(w)
		defer pools[w].Close()
	}
	r := rand.New(rand.NewPCG(41, 42))
	const cols = 512
	checked := 0
	for _, typ := range types {
		for _, rows := range []int{64, 37} {
			m := &Matrix{Name: typ.String(), Type: typ, Rows: rows, Cols: cols, Data: weightsOf(t, r, typ, rows, cols)}
			if err := m.Supported(); err != nil {
				t.Fatal(err)
			}
			for _, n := range []int{1, 3, 8} {
				x := make([]float32, n*cols)
				for i := range x {
					x[i] = float32(r.NormFloat64())
				}
				want := make([]float32, n*rows)
				MatMul(m, x, n, want, nil)
				for _, w := range []int{1, 2, 3, 8} {
					got := make([]float32, n*rows)
					MatMul(m, x, n, got, pools[w])
					for i := range got {
						if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
							t.Fatalf("%s rows=%d n=%d, %d workers: out[%d] = %g, 1 worker %g", typ, rows, n, w, i, got[i], want[i])
						}
					}
					checked += len(got)
				}
			}
		}
	}
	t.Logf("%d types: %d outputs equal on 1, 2, 3 and 8 workers", len(types), checked)
}

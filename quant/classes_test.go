package quant

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/bankml/bankml/gguf"
	"github.com/bankml/bankml/parallel"
)

// TestMatMulAsIsTheFreshColumn: every column of a classed product
// (MatMulPlanesAs, MatMulSharedAs) is, bit for bit, column Index of a plain
// MatMulPlanes over N columns holding it there — for every type MatMul
// multiplies, packed and plain, at every level, with classes that switch
// F32/F16/BF16 between tinyBLAS and vec_dot and repacked Q4_K between its gemm
// and gemv chains within one call.
func TestMatMulAsIsTheFreshColumn(t *testing.T) {
	r := rand.New(rand.NewPCG(71, 72))
	pool := parallel.New(2)
	defer pool.Close()
	const cols = 512
	// A decode column, the first, middle and last columns of a 5-column
	// product (the last one Q4_K's gemv), two of a 2-column one, a lone
	// column again, one of 17.
	cls := []ColClass{{1, 0}, {5, 0}, {5, 2}, {5, 4}, {2, 0}, {2, 1}, {1, 0}, {17, 16}, {17, 3}}
	n := len(cls)
	checked, classDep := 0, 0
	for _, l := range Levels() {
		w, err := NewWork(l, pool)
		if err != nil {
			t.Fatal(err)
		}
		for _, typ := range matMulTypes() {
			for _, rows := range []int{64, 20} {
				for _, repack := range []bool{false, true} {
					m := Matrix{Name: typ.String(), Type: typ, Rows: rows, Cols: cols, Data: weightsOf(t, r, typ, rows, cols)}
					if repack {
						if _, err := m.Repack(); err != nil {
							t.Fatal(err)
						}
					}
					name := fmt.Sprintf("%s %s rows=%d repack=%v", l, typ, rows, repack)
					x := randRow(r, n*cols)
					got := make([]float32, n*rows)
					w.MatMulPlanesAs([]Matrix{m}, x, n, cls, got)
					shared := make([]float32, n*rows)
					f16 := Matrix{Name: "f16", Type: gguf.F16, Rows: 8, Cols: cols, Data: weightsOf(t, r, gguf.F16, 8, cols)}
					w.MatMulSharedAs(x, n, cls, Product{Planes: []Matrix{f16}, Out: make([]float32, n*8)}, Product{Planes: []Matrix{m}, Out: shared})
					for c, k := range cls {
						fresh := randRow(r, int(k.N)*cols)
						copy(fresh[int(k.Index)*cols:], x[c*cols:(c+1)*cols])
						want := make([]float32, int(k.N)*rows)
						w.MatMulPlanes([]Matrix{m}, fresh, int(k.N), want)
						for i := range rows {
							wv := want[int(k.Index)*rows+i]
							if math.Float32bits(got[c*rows+i]) != math.Float32bits(wv) || math.Float32bits(shared[c*rows+i]) != math.Float32bits(wv) {
								t.Fatalf("%s: column %d (class %v) row %d: %g (shared %g), fresh %g", name, c, k, i, got[c*rows+i], shared[c*rows+i], wv)
							}
						}
					}
					checked++
					if ClassDependent(&m) {
						classDep++
					}
				}
			}
		}
	}
	t.Logf("%d of %d classed products equal to their fresh columns (%d of them class-dependent)", checked, checked, classDep)
	if classDep == 0 {
		t.Error("no class-dependent product was checked")
	}
}

// TestMatMulAsRefusesBadClasses: a class outside 0 <= Index < N, or a class
// list of the wrong length, panics naming it.
func TestMatMulAsRefusesBadClasses(t *testing.T) {
	w, err := NewWork(LevelGeneric, nil)
	if err != nil {
		t.Fatal(err)
	}
	m := Matrix{Name: "w", Type: gguf.F32, Rows: 4, Cols: 32, Data: make([]byte, 4*32*4)}
	for _, tc := range []struct {
		name string
		cls  []ColClass
	}{
		{"index past N", []ColClass{{2, 2}, {1, 0}}},
		{"negative index", []ColClass{{2, -1}, {1, 0}}},
		{"one class for two columns", []ColClass{{1, 0}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Error("no panic")
				}
			}()
			w.MatMulPlanesAs([]Matrix{m}, make([]float32, 64), 2, tc.cls, make([]float32, 8))
		})
	}
}

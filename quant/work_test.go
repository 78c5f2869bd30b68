package quant

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/bankml/bankml/gguf"
	"github.com/bankml/bankml/parallel"
)

// TestWorkMatMulAllocatesNothing: once a Work's buffers have grown to a
// shape, MatMul allocates nothing, for every type and path (packed tiles,
// plain block kernels, the Q4_K repacked chains, f32/f16/bf16), at every
// level, on a pool of two workers.
func TestWorkMatMulAllocatesNothing(t *testing.T) {
	r := rand.New(rand.NewPCG(51, 52))
	pool := parallel.New(2)
	defer pool.Close()
	types := matMulTypes()
	for _, l := range Levels() {
		w, err := NewWork(l, pool)
		if err != nil {
			t.Fatal(err)
		}
		for _, typ := range types {
			m := &Matrix{Name: typ.String(), Type: typ, Rows: 64, Cols: 512, Data: weightsOf(t, r, typ, 64, 512)}
			if _, err := m.Repack(); err != nil {
				t.Fatal(err)
			}
			for _, n := range []int{1, 5} {
				x := randRow(r, n*512)
				out := make([]float32, n*64)
				w.MatMul(m, x, n, out) // grow the buffers
				if a := testing.AllocsPerRun(20, func() { w.MatMul(m, x, n, out) }); a != 0 {
					t.Errorf("%s %s n=%d: %v allocations per MatMul", l, typ, n, a)
				}
			}
		}
	}
}

// matMulTypes lists every type MatMul multiplies, sorted.
func matMulTypes() []gguf.GGMLType {
	types := []gguf.GGMLType{gguf.F32, gguf.F16, gguf.BF16}
	for typ := range blockKernels {
		types = append(types, typ)
	}
	slices.Sort(types)
	return types
}

// TestMatMulPackedIndependentOfWorkers: Repack'ed matrices give the same bits
// on pools of 1, 2, 3 and 8 workers at every level, for row counts that are
// and are not multiples of 16 (up to six Q1_0 bands, shared out by q1Part)
// and up to more than tileCols columns.
func TestMatMulPackedIndependentOfWorkers(t *testing.T) {
	r := rand.New(rand.NewPCG(53, 54))
	checked := 0
	for _, l := range Levels() {
		var works []*Work
		for _, size := range []int{1, 2, 3, 8} {
			p := parallel.New(size)
			defer p.Close()
			w, err := NewWork(l, p)
			if err != nil {
				t.Fatal(err)
			}
			works = append(works, w)
		}
		for _, typ := range []gguf.GGMLType{gguf.Q1_0, gguf.Q2_0, gguf.TQ2_0} {
			for _, rows := range []int{16, 37, 200, 16*q1Band*5 + 3} {
				m := &Matrix{Name: "w", Type: typ, Rows: rows, Cols: 512, Data: weightsOf(t, r, typ, rows, 512)}
				if _, err := m.Repack(); err != nil {
					t.Fatal(err)
				}
				for _, n := range []int{1, 3, 17} {
					x := randRow(r, n*512)
					want := make([]float32, n*rows)
					works[0].MatMul(m, x, n, want)
					for _, w := range works[1:] {
						got := make([]float32, n*rows)
						w.MatMul(m, x, n, got)
						for i := range got {
							if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
								t.Fatalf("%s %s rows=%d n=%d: out[%d] differs between pools", l, typ, rows, n, i)
							}
						}
						checked += len(got)
					}
				}
			}
		}
	}
	t.Logf("%d packed outputs equal on 1, 2, 3 and 8 workers", checked)
}

// TestNewWorkRefusesMissingLevel: a level the CPU lacks is an error naming
// what is missing, never a fallback.
func TestNewWorkRefusesMissingLevel(t *testing.T) {
	for l := LevelGeneric; l <= LevelAVX512; l++ {
		_, err := NewWork(l, nil)
		if (err == nil) != (l.Check() == nil) {
			t.Errorf("%s: NewWork error %v, Check %v", l, err, l.Check())
		}
	}
	if _, err := NewWork(Level(9), nil); err == nil {
		t.Error("an unknown level was accepted")
	}
}

// TestLevelFromEnv: BANKML_CPU names a level (case-insensitive); unknown
// names and levels this CPU lacks are errors, unset is Detect().
func TestLevelFromEnv(t *testing.T) {
	for _, tc := range []struct {
		env  string
		want Level
		err  bool
	}{{"", Detect(), false}, {"generic", LevelGeneric, false}, {"AVX2", LevelAVX2, LevelAVX2.Check() != nil}, {"avx512", LevelAVX512, LevelAVX512.Check() != nil}, {"sse9", 0, true}} {
		t.Setenv(EnvCPU, tc.env)
		l, err := LevelFromEnv()
		if (err != nil) != tc.err || (err == nil && l != tc.want) {
			t.Errorf("%s=%q: %v, %v", EnvCPU, tc.env, l, err)
		}
		if err != nil && !strings.Contains(err.Error(), EnvCPU) {
			t.Errorf("%s=%q: error %q does not name the variable", EnvCPU, tc.env, err)
		}
	}
}

// BenchmarkMatMulDispatch measures what the pool adds to a matmul at Qwen3-8B
// shapes: the same Repack'ed Q1_0 and Q2_0 matrices multiplied on one
// goroutine (nil pool) and on a pool of two, plus an empty Run on the pool
// (its fixed cost per matmul; a decoded token of Qwen3-8B runs 253 matmuls).
func BenchmarkMatMulDispatch(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	l := Detect()
	pool := parallel.New(2)
	defer pool.Close()
	b.Run("empty-run", func(b *testing.B) {
		var j nopJob
		for b.Loop() {
			pool.Run(256, 32, &j)
		}
	})
	for _, typ := range []gguf.GGMLType{gguf.Q1_0, gguf.Q2_0} {
		for _, shape := range [][2]int{{4096, 4096}, {1024, 4096}, {12288, 4096}, {4096, 12288}} {
			rows, cols := shape[0], shape[1]
			m := &Matrix{Name: "w", Type: typ, Rows: rows, Cols: cols, Data: randLowbitBlocks(r, rows*cols/typ.BlockSize(), typ.TypeSize())}
			if _, err := m.Repack(); err != nil {
				b.Fatal(err)
			}
			x := randRow(r, cols)
			out := make([]float32, rows)
			for _, threads := range []int{1, 2} {
				var p *parallel.Pool
				if threads == 2 {
					p = pool
				}
				w, _ := NewWork(l, p)
				b.Run(fmt.Sprintf("%s/%dx%d/t=%d", typ, rows, cols, threads), func(b *testing.B) {
					for b.Loop() {
						w.MatMul(m, x, 1, out)
					}
				})
			}
		}
	}
}

type nopJob struct{}

func (*nopJob) Do(_, _, _ int) {}

// TestMatMulPlanesIsThePlaneSum: MatMulPlanes gives, bit for bit, the sum in
// plane order ((P0·x + P1·x) + P2·x, float32) of what MatMul gives for each
// plane alone, for 1 to 3 planes of every type MatMul takes, at every level,
// for row counts that are and are not multiples of 16, one column and more
// than tileCols columns, with every plane Repack'ed (the packed tiles) and
// with one plane not (the plain kernels for all). Once grown, it allocates
// nothing (checked for 3 planes and 17 columns).
func TestMatMulPlanesIsThePlaneSum(t *testing.T) {
	r := rand.New(rand.NewPCG(55, 56))
	pool := parallel.New(2)
	defer pool.Close()
	types := matMulTypes()
	const cols = 512
	checked := 0
	for _, l := range Levels() {
		w, err := NewWork(l, pool)
		if err != nil {
			t.Fatal(err)
		}
		for _, typ := range types {
			for _, rows := range []int{37, 64} {
				planes := make([]Matrix, 3)
				for p := range planes {
					planes[p] = Matrix{Name: fmt.Sprintf("w.ptqtp%d", p), Type: typ, Rows: rows, Cols: cols, Data: weightsOf(t, r, typ, rows, cols)}
				}
				for _, mixed := range []bool{false, true} {
					if Packable(typ) {
						for p := range planes {
							if mixed && p == 1 {
								planes[p].pk = nil
								continue
							}
							if _, err := planes[p].Repack(); err != nil {
								t.Fatal(err)
							}
						}
					} else if mixed {
						continue
					}
					for np := 1; np <= 3; np++ {
						for _, n := range []int{1, 17} {
							x := randRow(r, n*cols)
							want := make([]float32, n*rows)
							one := make([]float32, n*rows)
							for p := range np {
								w.MatMul(&planes[p], x, n, one)
								for i, v := range one {
									if p == 0 {
										want[i] = v
									} else {
										want[i] += v
									}
								}
							}
							got := make([]float32, n*rows)
							w.MatMulPlanes(planes[:np], x, n, got)
							for i := range got {
								if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
									t.Fatalf("%s %s rows=%d planes=%d n=%d mixed=%v: out[%d] = %g, plane sum %g", l, typ, rows, np, n, mixed, i, got[i], want[i])
								}
							}
							checked += len(got)
							if np < 3 || n == 1 {
								continue
							}
							if a := testing.AllocsPerRun(2, func() { w.MatMulPlanes(planes[:np], x, n, got) }); a != 0 {
								t.Errorf("%s %s planes=%d n=%d: %v allocations per MatMulPlanes", l, typ, np, n, a)
							}
						}
					}
				}
			}
		}
	}
	t.Logf("%d outputs of MatMulPlanes equal to the plane sums of MatMul", checked)
}

// TestMatMulPlanesRefusesMismatchedPlanes: planes of different types or
// shapes, and no planes, panic with a message naming them.
func TestMatMulPlanesRefusesMismatchedPlanes(t *testing.T) {
	r := rand.New(rand.NewPCG(57, 58))
	w, err := NewWork(LevelGeneric, nil)
	if err != nil {
		t.Fatal(err)
	}
	mat := func(name string, typ gguf.GGMLType, rows int) Matrix {
		return Matrix{Name: name, Type: typ, Rows: rows, Cols: 256, Data: weightsOf(t, r, typ, rows, 256)}
	}
	for _, tc := range []struct {
		name   string
		planes []Matrix
		want   string
	}{
		{"none", nil, "no planes"},
		{"type", []Matrix{mat("a", gguf.TQ2_0, 16), mat("b", gguf.Q2_0, 16)}, `plane "b" is q2_0`},
		{"rows", []Matrix{mat("a", gguf.TQ2_0, 16), mat("b", gguf.TQ2_0, 32)}, `plane "b" is tq2_0 32x256`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				msg := fmt.Sprint(recover())
				if !strings.Contains(msg, tc.want) {
					t.Errorf("panic %q, want it to contain %q", msg, tc.want)
				}
			}()
			w.MatMulPlanes(tc.planes, make([]float32, 256), 1, make([]float32, 32))
		})
	}
}

// TestMatMulSharedIsSeparateProducts: MatMulShared over products of every
// activation format in one call (interleaved so that each buffer is reused
// after another format ran: Q8_0 packed and plain-layout, Q8_K, Q8_1, the
// Q4_K repacked mix, f16, bf16, f32, multi-plane) gives, bit for bit, what
// MatMulPlanes gives for each product alone, at every level, for 1, 5 and
// 17 columns, and allocates nothing once grown.
func TestMatMulSharedIsSeparateProducts(t *testing.T) {
	r := rand.New(rand.NewPCG(59, 60))
	pool := parallel.New(2)
	defer pool.Close()
	const cols = 512
	type spec struct {
		typ    gguf.GGMLType
		rows   int
		planes int
		repack bool
	}
	specs := []spec{
		{gguf.Q1_0, 48, 1, true}, {gguf.Q4_K, 64, 1, false}, {gguf.Q1_0, 37, 1, false}, {gguf.TQ2_0, 37, 2, true},
		{gguf.F16, 20, 1, false}, {gguf.Q2_0, 40, 3, true}, {gguf.Q6_K, 24, 1, false}, {gguf.Q4_1, 16, 1, false},
		{gguf.BF16, 20, 1, false}, {gguf.Q8_0, 32, 1, false}, {gguf.Q4_K, 64, 1, false}, {gguf.F32, 8, 1, false},
		{gguf.TQ2_0, 16, 1, false}, {gguf.Q2_K, 16, 1, false}, {gguf.F16, 20, 1, false},
	}
	weights := make([][]Matrix, len(specs))
	for i, s := range specs {
		for p := range s.planes {
			m := Matrix{Name: fmt.Sprintf("w%d.%d", i, p), Type: s.typ, Rows: s.rows, Cols: cols, Data: weightsOf(t, r, s.typ, s.rows, cols)}
			if s.repack {
				if _, err := m.Repack(); err != nil {
					t.Fatal(err)
				}
			}
			weights[i] = append(weights[i], m)
		}
	}
	checked := 0
	for _, l := range Levels() {
		w, err := NewWork(l, pool)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range []int{1, 5, 17} {
			x := randRow(r, n*cols)
			ps := make([]Product, len(specs))
			for i, s := range specs {
				ps[i] = Product{Planes: weights[i], Out: make([]float32, n*s.rows)}
			}
			w.MatMulShared(x, n, ps...)
			for i, s := range specs {
				want := make([]float32, n*s.rows)
				w.MatMulPlanes(weights[i], x, n, want)
				for o := range want {
					if math.Float32bits(ps[i].Out[o]) != math.Float32bits(want[o]) {
						t.Fatalf("%s n=%d product %d (%s, %d planes): out[%d] = %g, alone %g", l, n, i, s.typ, s.planes, o, ps[i].Out[o], want[o])
					}
				}
				checked += len(want)
			}
			if a := testing.AllocsPerRun(2, func() { w.MatMulShared(x, n, ps...) }); a != 0 {
				t.Errorf("%s n=%d: %v allocations per MatMulShared", l, n, a)
			}
		}
	}
	t.Logf("%d outputs of MatMulShared equal to the products computed alone", checked)
}

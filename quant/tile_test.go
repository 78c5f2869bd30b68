package quant

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/bankml/bankml/gguf"
	"github.com/bankml/bankml/parallel"
)

// packedDots computes every (row, column) dot of a packed matrix at level l
// through the tile kernels, one group and chunk of columns at a time.
func packedDotsQ8(t *testing.T, l Level, p *packed, a *q8Act) []float32 {
	t.Helper()
	out := make([]float32, a.ncols*p.rows)
	tmp := make([]float32, 16*a.ncols)
	if p.typ == gguf.Q1_0 {
		a.fillLUT(l, 0, a.ncols) // the lookup-table tile's tables
	}
	for g := range p.groups {
		switch p.typ {
		case gguf.Q2_0:
			tileQ2_0(l, p.group(g), p.nb, a, 0, a.ncols, tmp)
		case gguf.Q1_0:
			tileQ1_0(l, p, g, a, 0, a.ncols, tmp)
		}
		for c := range a.ncols {
			for r := range packRows {
				if row := g*packRows + r; row < p.rows {
					out[c*p.rows+row] = tmp[16*c+r]
				}
			}
		}
	}
	return out
}

// packedDotsQ8K is packedDotsQ8 for TQ2_0 (Q8_K activations).
func packedDotsQ8K(l Level, p *packed, a *q8KAct) []float32 {
	out := make([]float32, a.ncols*p.rows)
	tmp := make([]float32, 16*a.ncols)
	for g := range p.groups {
		tileTQ2_0(l, p.group(g), p.nb, a, 0, a.ncols, tmp, make([]float32, 128*a.ncols))
		for c := range a.ncols {
			for r := range packRows {
				if row := g*packRows + r; row < p.rows {
					out[c*p.rows+row] = tmp[16*c+r]
				}
			}
		}
	}
	return out
}

// TestTQ2_0TileMatchesPlainKernel: the packed TQ2_0 tile at every level gives
// the bits of VecDotTQ2_0Q8_K (oracle-tested) on valid and arbitrary codes,
// for activations from the quantizer and raw Q8_K blocks with consistent
// bsums.
func TestTQ2_0TileMatchesPlainKernel(t *testing.T) {
	r := rand.New(rand.NewPCG(83, 84))
	f := kFormats[1]
	if f.typ != gguf.TQ2_0 {
		t.Fatal("kFormats[1] is not TQ2_0")
	}
	checked := 0
	for _, l := range Levels() {
		for _, shape := range [][3]int{{1, 256, 1}, {37, 1024, 3}, {16, 4096, 2}, {33, 512, 5}, {16, 768, 16}} {
			rows, cols, n := shape[0], shape[1], shape[2]
			nb := cols / QK_K
			w := f.randKBlocks(r, rows*nb, r.IntN(2) == 0)
			p := packMatrix(gguf.TQ2_0, w, rows, nb)
			var a q8KAct
			a.reset(cols, n)
			raw := make([][]byte, n)
			for c := range n {
				if c%2 == 0 {
					raw[c] = make([]byte, nb*BlockQ8_KSize)
					QuantizeRowQ8_K(randRow(r, cols), raw[c])
				} else {
					raw[c] = kRandQ8_K(r, nb, true)
				}
				a.fromQ8_K(c, raw[c])
			}
			got := packedDotsQ8K(l, p, &a)
			for c := range n {
				for i := range rows {
					want := VecDotTQ2_0Q8_K(w[i*nb*BlockTQ2_0Size:(i+1)*nb*BlockTQ2_0Size], raw[c], nb)
					if g := got[c*rows+i]; math.Float32bits(g) != math.Float32bits(want) {
						t.Fatalf("%s rows=%d cols=%d: (%d,%d) = %g, plain %g", l, rows, cols, i, c, g, want)
					}
					checked++
				}
			}
		}
	}
	t.Logf("%d packed TQ2_0 outputs equal to the plain kernel's", checked)
}

// TestTilesMatchPlainKernels: the packed tiles at every level give the bits
// of the plain kernels (themselves oracle-tested against the reference).
func TestTilesMatchPlainKernels(t *testing.T) {
	r := rand.New(rand.NewPCG(81, 82))
	for _, l := range Levels() {
		for _, tc := range []struct {
			typ    gguf.GGMLType
			qk, bs int
			dot    func(w, a []byte, nb int) float32
		}{
			{gguf.Q2_0, QK2_0, BlockQ2_0Size, VecDotQ2_0Q8_0},
			{gguf.Q1_0, QK1_0, BlockQ1_0Size, VecDotQ1_0Q8_0},
		} {
			for _, shape := range [][3]int{{1, 256, 1}, {37, 512, 3}, {16, 4096, 1}, {33, 1024, 5}, {40, 1024, 6}, {40, 512, 3}, {24, 512, 11}} {
				rows, cols, n := shape[0], shape[1], shape[2]
				nb := cols / tc.qk
				w := randLowbitBlocks(r, rows*nb, tc.bs)
				p := packMatrix(tc.typ, w, rows, nb)
				var a q8Act
				a.reset(cols, n)
				raw := make([][]byte, n)
				for c := range n {
					raw[c] = randActivations(r, cols/QK8_0)
					if shape[0] == 40 { // quantized columns only, one with d = Inf
						x := randRow(r, cols)
						if c == 3 {
							x[5] = 3e38
						}
						QuantizeRowQ8_0(x, raw[c])
					}
					a.fromQ8_0(c, raw[c])
				}
				got := packedDotsQ8(t, l, p, &a)
				if tc.typ == gguf.Q1_0 && l == LevelAVX512 { // and the plain-layout kernel
					a.fillDy8()
					for c := range n {
						for i := range rows {
							g := dotQ1_0Plain(w[i*nb*tc.bs:(i+1)*nb*tc.bs], &a, c, nb)
							want := tc.dot(w[i*nb*tc.bs:(i+1)*nb*tc.bs], raw[c], nb)
							if math.Float32bits(g) != math.Float32bits(want) {
								t.Fatalf("plain Q1_0 avx512 rows=%d cols=%d: (%d,%d) = %g, plain Go %g", rows, cols, i, c, g, want)
							}
						}
					}
				}
				for c := range n {
					for i := range rows {
						want := tc.dot(w[i*nb*tc.bs:(i+1)*nb*tc.bs], raw[c], nb)
						if g := got[c*rows+i]; math.Float32bits(g) != math.Float32bits(want) {
							t.Fatalf("%s %s rows=%d cols=%d n=%d: (%d,%d) = %g (%#x), plain %g (%#x)", l, tc.typ, rows, cols, n, i, c, g, math.Float32bits(g), want, math.Float32bits(want))
						}
					}
				}
			}
		}
	}
}

// TestQ1_0LUTMatchesGoTwin: the SIMD table builders (q1LUTAVX512,
// q1LUTAVX2) write the bits of fillLUTColGo, their element-wise statement,
// on quantized and raw activation blocks (-128 and the edge f16 scales
// among them), for a pass of columns that does not start at column 0, at
// every level this CPU has that builds tables.
func TestQ1_0LUTMatchesGoTwin(t *testing.T) {
	r := rand.New(rand.NewPCG(85, 86))
	const cols, n = 1024, 5
	var a q8Act
	a.reset(cols, n)
	edge := []uint16{0x7c00, 0xfc00, 0x7e00, 0x8000, 0x0001, 0x7bff}
	for c := range n {
		raw := randActivations(r, cols/QK8_0)
		for b := range cols / QK8_0 {
			if r.IntN(4) == 0 {
				binary.LittleEndian.PutUint16(raw[b*BlockQ8_0Size:], edge[r.IntN(len(edge))])
			}
			if r.IntN(4) == 0 {
				raw[b*BlockQ8_0Size+2+r.IntN(QK8_0)] = 0x80
			}
		}
		a.fromQ8_0(c, raw)
	}
	a.fillLUT(LevelGeneric, 1, n-1)
	want := slices.Clone(a.lut[:4*cols*(n-1)])
	tested := 0
	for _, l := range Levels() {
		if !hasQ1LUT(l) {
			continue
		}
		a.lutOK = false
		a.fillLUT(l, 1, n-1)
		for i, v := range a.lut[:4*cols*(n-1)] {
			if !bitsEq(v, want[i]) {
				t.Fatalf("%s: column %d, entry %d: %#x, Go %#x", l, 1+i/(4*cols), i%(4*cols), math.Float32bits(v), math.Float32bits(want[i]))
			}
		}
		t.Logf("%s: %d of %d table entries equal", l, len(want), len(want))
		tested++
	}
	if tested == 0 {
		t.Skip("no level with a Q1_0 table builder on this CPU")
	}
}

// TestQ1_0PackedMatMulChunks: Work.MatMul on Repack'ed Q1_0 matrices at
// every level against VecDotQ1_0Q8_0 (oracle-tested) of each row and
// quantized column, on shapes that exercise the AVX-512 lookup-table path's
// chunking: row blocks not a multiple of q1Chunk (a last chunk of 3, run
// in two parts at two columns), more groups than
// q1Band and a last band that is not whole, more columns than one pass
// (lutCols), a pool of 2 workers.
func TestQ1_0PackedMatMulChunks(t *testing.T) {
	r := rand.New(rand.NewPCG(87, 88))
	pool := parallel.New(2)
	defer pool.Close()
	checked := 0
	for _, l := range Levels() {
		for _, shape := range [][3]int{{33, 1536, 3}, {300, 1152, 1}, {277, 12288, 6}, {40, 4096, 13}, {33, 1408, 2}} {
			rows, cols, n := shape[0], shape[1], shape[2]
			m, w, x := randPackedQ1_0(t, r, rows, cols, n)
			ws, err := NewWork(l, pool)
			if err != nil {
				t.Fatal(err)
			}
			out := make([]float32, n*rows)
			ws.MatMul(m, x, n, out)
			checked += checkQ1_0Plain(t, l.String(), w, x, rows, cols, n, out)
		}
	}
	t.Logf("%d outputs equal to the plain kernel's", checked)
}

// TestQ1_0LUTClaimsAnyRange: the lookup-table path computes the same bits
// for any split of a packed Q1_0 matrix's groups into claims, including
// claims that start or end inside a band (MatMul's shares hand out whole
// bands, runShares): each output against VecDotQ1_0Q8_0 (oracle-tested).
func TestQ1_0LUTClaimsAnyRange(t *testing.T) {
	r := rand.New(rand.NewPCG(91, 92))
	checked := 0
	for _, l := range Levels() {
		if !hasQ1LUT(l) {
			continue
		}
		for _, shape := range [][3]int{{16 * 21, 1152, 2}, {16*9 + 5, 2048, 1}} {
			rows, cols, n := shape[0], shape[1], shape[2]
			m, w, x := randPackedQ1_0(t, r, rows, cols, n)
			ws, err := NewWork(l, nil)
			if err != nil {
				t.Fatal(err)
			}
			groups := m.packedRows().groups
			for split := range 3 {
				out := make([]float32, n*rows)
				ws.prep = prepared{}
				ws.prepareQ8(x, cols, n)
				ws.q8.fillLUT(l, 0, n)
				j := &matJob{w: ws, m: m, planes: []Matrix{*m}, n: n, out: out, path: pathPackedQ1, c0: 0, cn: n}
				for lo := 0; lo < groups; {
					hi := min(groups, lo+1+r.IntN(2+5*split))
					j.Do(0, lo, hi)
					lo = hi
				}
				checked += checkQ1_0Plain(t, fmt.Sprintf("%s split %d", l, split), w, x, rows, cols, n, out)
			}
		}
	}
	if checked == 0 {
		t.Skip("no level with the lookup-table tile on this CPU")
	}
	t.Logf("%d outputs equal to the plain kernel's", checked)
}

// randPackedQ1_0 returns a Repack'ed rows x cols Q1_0 matrix of random
// blocks (its plain rows in w) and n random columns.
func randPackedQ1_0(t *testing.T, r *rand.Rand, rows, cols, n int) (m *Matrix, w []byte, x []float32) {
	t.Helper()
	w = randLowbitBlocks(r, rows*(cols/QK1_0), BlockQ1_0Size)
	m = &Matrix{Name: "w", Type: gguf.Q1_0, Rows: rows, Cols: cols, Data: w}
	if _, err := m.Repack(); err != nil {
		t.Fatal(err)
	}
	return m, w, randRow(r, n*cols)
}

// checkQ1_0Plain compares out (n columns of rows outputs) with
// VecDotQ1_0Q8_0 (oracle-tested) of each row and quantized column, bit for
// bit, and returns the number of outputs checked.
func checkQ1_0Plain(t *testing.T, what string, w []byte, x []float32, rows, cols, n int, out []float32) int {
	t.Helper()
	nb := cols / QK1_0
	xq := make([]byte, cols/QK8_0*BlockQ8_0Size)
	for c := range n {
		QuantizeRowQ8_0(x[c*cols:(c+1)*cols], xq)
		for i := range rows {
			want := VecDotQ1_0Q8_0(w[i*nb*BlockQ1_0Size:(i+1)*nb*BlockQ1_0Size], xq, nb)
			if g := out[c*rows+i]; !bitsEq(g, want) {
				t.Fatalf("%s rows=%d cols=%d n=%d: (%d,%d) = %#x, plain %#x", what, rows, cols, n, i, c, math.Float32bits(g), math.Float32bits(want))
			}
		}
	}
	return n * rows
}

// TestQ1_0FourColumnsInBothForms: the Q1_0 walk runs each block of a batch
// of four columns (and of a lone column) in the integer form where all the
// batch's scales allow it (q1IntScales) and in the float chain elsewhere,
// for which alone Work.MatMul builds the float tables; with activations whose
// Q8_0 blocks differ in magnitude by up to 2^9 (and some all zero) in every
// other Q1_0 block, both kinds of block occur, and every output equals
// VecDotQ1_0Q8_0
// (oracle-tested) bit for bit.
func TestQ1_0FourColumnsInBothForms(t *testing.T) {
	r := rand.New(rand.NewPCG(93, 94))
	pool := parallel.New(2)
	defer pool.Close()
	const rows, cols, n = 16*9 + 3, 2048, 11 // batches of 4, 4, 2 and 1
	m, w, x := randPackedQ1_0(t, r, rows, cols, n)
	mixQ1Forms(r, x)
	checked := 0
	for _, l := range Levels() {
		ws, err := NewWork(l, pool)
		if err != nil {
			t.Fatal(err)
		}
		if l == LevelAVX512 {
			// The count from a Work of its own: ws builds its tables in
			// MatMul, the float ones only for the float chain's blocks.
			probe, err := NewWork(l, nil)
			if err != nil {
				t.Fatal(err)
			}
			probe.prepareQ8(x, cols, n)
			probe.q8.fillLUT(l, 0, n)
			ints, floats := 0, 0
			nb := cols / QK1_0
			for rel := 0; rel < n; {
				w := q1LUTCols(l, n-rel)
				for b := range nb {
					if probe.q8.imeta[rel*nb*4+4*w*b+3] == 1 {
						ints++
					} else {
						floats++
					}
				}
				rel += w
			}
			if ints == 0 || floats == 0 {
				t.Fatalf("%d blocks in the integer form and %d in the float chain: the data does not reach both", ints, floats)
			}
			t.Logf("%s: %d blocks of a batch in the integer form, %d in the float chain", l, ints, floats)
		}
		// Storage MatMul reuses, read as NaN where no table was built: a
		// float table the walk reads but fillLUTPart skipped (a block of
		// another batch, say) shows in the outputs.
		ws.q8.lut = make([]float32, 4*cols*n)
		for i := range ws.q8.lut {
			ws.q8.lut[i] = float32(math.NaN())
		}
		out := make([]float32, n*rows)
		ws.MatMul(m, x, n, out)
		checked += checkQ1_0Plain(t, l.String(), w, x, rows, cols, n, out)
	}
	t.Logf("%d outputs equal to the plain kernel's", checked)
}

// mixQ1Forms scales the Q8_0 blocks of x so that both forms of the Q1_0
// walk occur, in a pattern that differs from column to column (and so from
// batch to batch): about two blocks of 128 in three keep their magnitudes
// (the integer form's case); in the others the sub-blocks get scales up to
// 2^9 apart, or zero (the float chain's).
func mixQ1Forms(r *rand.Rand, x []float32) {
	float := false
	for i := 0; i < len(x); i += QK8_0 {
		if i%QK1_0 == 0 {
			float = r.IntN(3) == 0
		}
		f := float32(1)
		if float {
			f = float32(math.Ldexp(1, -r.IntN(10)))
			if r.IntN(9) == 0 {
				f = 0
			}
		}
		for j := i; j < i+QK8_0; j++ {
			x[j] *= f
		}
	}
}

// TestQ1_0SharedInputGetsEveryTable: a one-plane Q1_0 product, whose walk
// needs the float tables of the float chain's blocks only (and has only
// those built), then a two-plane one, whose tiles read every block's, on
// the same columns through MatMulShared: each output equals the sum of the
// planes' VecDotQ1_0Q8_0 (oracle-tested), so the second product did not
// run on the first one's partial tables.
func TestQ1_0SharedInputGetsEveryTable(t *testing.T) {
	r := rand.New(rand.NewPCG(95, 96))
	pool := parallel.New(2)
	defer pool.Close()
	const rows, cols, n = 16*3 + 5, 1024, 6
	one, w1, x := randPackedQ1_0(t, r, rows, cols, n)
	a, wa, _ := randPackedQ1_0(t, r, rows, cols, 0)
	b, wb, _ := randPackedQ1_0(t, r, rows, cols, 0)
	mixQ1Forms(r, x)
	nb := cols / QK1_0
	xq := make([]byte, cols/QK8_0*BlockQ8_0Size)
	for _, l := range Levels() {
		ws, err := NewWork(l, pool)
		if err != nil {
			t.Fatal(err)
		}
		o1, o2 := make([]float32, n*rows), make([]float32, n*rows)
		ws.MatMulShared(x, n, Product{Planes: []Matrix{*one}, Out: o1}, Product{Planes: []Matrix{*a, *b}, Out: o2})
		checkQ1_0Plain(t, l.String()+" one plane", w1, x, rows, cols, n, o1)
		for c := range n {
			QuantizeRowQ8_0(x[c*cols:(c+1)*cols], xq)
			for i := range rows {
				row := func(w []byte) []byte { return w[i*nb*BlockQ1_0Size : (i+1)*nb*BlockQ1_0Size] }
				want := VecDotQ1_0Q8_0(row(wa), xq, nb) + VecDotQ1_0Q8_0(row(wb), xq, nb)
				if g := o2[c*rows+i]; !bitsEq(g, want) {
					t.Fatalf("%s two planes after one: (%d,%d) = %#x, planes' sum %#x", l, i, c, math.Float32bits(g), math.Float32bits(want))
				}
			}
		}
	}
}

// TestQ1IntScales: the integer form's operands against their definition.
func TestQ1IntScales(t *testing.T) {
	for _, tc := range []struct {
		name  string
		dy    [4]float32
		m     [4]uint16
		scale float32
		ok    bool
	}{
		{"equal scales reduce to ones", [4]float32{1, 1, 1, 1}, [4]uint16{1, 1, 1, 1}, 1, true},
		{"scales a power of two apart", [4]float32{0.5, 1, 2, 0.25}, [4]uint16{2, 4, 8, 1}, 0.25, true},
		{"an odd significand keeps its bits", [4]float32{1.5, 0.75, 3, 0.375}, [4]uint16{12, 6, 24, 3}, 0.125, true},
		{"zero scales count for nothing", [4]float32{0, 2, 0, 1}, [4]uint16{0, 2, 0, 1}, 1, true},
		{"all zero is the zero sum", [4]float32{}, [4]uint16{}, 1, true},
		{"a span of 2^4 with full significands is too wide", [4]float32{2047.0 / 1024, 2047.0 / 1024 / 16, 1, 1}, [4]uint16{}, 0, false},
		{"a span of 2^15 is too wide", [4]float32{1, 1.0 / 32768, 1, 1}, [4]uint16{}, 0, false},
		{"a negative zero is refused", [4]float32{float32(math.Copysign(0, -1)), 1, 1, 1}, [4]uint16{}, 0, false},
		{"an infinite scale is refused", [4]float32{float32(math.Inf(1)), 1, 1, 1}, [4]uint16{}, 0, false},
		{"a NaN scale is refused", [4]float32{float32(math.NaN()), 1, 1, 1}, [4]uint16{}, 0, false},
		{"an f16 subnormal", [4]float32{float32(math.Ldexp(1, -24)), float32(math.Ldexp(3, -24)), 0, 0}, [4]uint16{1, 3, 0, 0}, float32(math.Ldexp(1, -24)), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, scale, ok := q1IntScales(&tc.dy)
			if ok != tc.ok || ok && (m != tc.m || scale != tc.scale) {
				t.Fatalf("q1IntScales(%v) = %v, %v, %v; want %v, %v, %v", tc.dy, m, scale, ok, tc.m, tc.scale, tc.ok)
			}
			if !ok {
				return
			}
			// The definition: dy_k = m_k * scale exactly, Σ m_k <= 32767.
			sum := 0
			for k := range 4 {
				if float64(tc.dy[k]) != float64(m[k])*float64(scale) {
					t.Fatalf("dy[%d] = %v, m*scale = %v", k, tc.dy[k], float64(m[k])*float64(scale))
				}
				sum += int(m[k])
			}
			if sum > 32767 {
				t.Fatalf("Σm = %d", sum)
			}
		})
	}
}

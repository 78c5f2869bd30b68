package ternary

import (
	"bytes"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/bankml/bankml/parallel"
	"github.com/bankml/bankml/quant"
)

// TestCandidateOrderIsPinned: the topology search enumerates exactly the tuples of the research digest (§2.2), in
// its order, written out here from the text, not from the code: K=1 0, −1, +1; K=2 (0,0) (0,−1) (0,+1) (−1,0)
// (+1,0) (−1,−1) (−1,+1) (+1,−1) (+1,+1); K=3 the zero tuple, support 1 finest plane first, support 2 as (0,±,±),
// (±,0,±), (±,±,0) each lexicographic with −1 first, then the 8 support-3 tuples lexicographic.
func TestCandidateOrderIsPinned(t *testing.T) {
	want := map[int][][3]int8{
		1: {{0, 0, 0}, {-1, 0, 0}, {1, 0, 0}},
		2: {{0, 0, 0}, {0, -1, 0}, {0, 1, 0}, {-1, 0, 0}, {1, 0, 0}, {-1, -1, 0}, {-1, 1, 0}, {1, -1, 0}, {1, 1, 0}},
		3: {{0, 0, 0},
			{0, 0, -1}, {0, 0, 1}, {0, -1, 0}, {0, 1, 0}, {-1, 0, 0}, {1, 0, 0},
			{0, -1, -1}, {0, -1, 1}, {0, 1, -1}, {0, 1, 1},
			{-1, 0, -1}, {-1, 0, 1}, {1, 0, -1}, {1, 0, 1},
			{-1, -1, 0}, {-1, 1, 0}, {1, -1, 0}, {1, 1, 0},
			{-1, -1, -1}, {-1, -1, 1}, {-1, 1, -1}, {-1, 1, 1}, {1, -1, -1}, {1, -1, 1}, {1, 1, -1}, {1, 1, 1}},
	}
	for k, w := range want {
		if got := candidates(k); !slices.Equal(got, w) {
			t.Errorf("K=%d: candidates\n %v\nwant\n %v", k, got, w)
		}
	}
	// The tie-break the order exists for: with equal scales a weight at one level lands in the last plane.
	var l levelSet
	l.init(3, [3]float32{0.5, 0.5, 0.5})
	if c := l.cands[l.nearest(0.5)]; c != [3]int8{0, 0, 1} {
		t.Errorf("equal scales, w = α: %v, want (0,0,+1)", c)
	}
	if c := l.cands[l.nearest(1)]; c != [3]int8{0, 1, 1} {
		t.Errorf("equal scales, w = 2α: %v, want (0,+1,+1)", c)
	}
}

// TestLambdaRule pins the ridge step's λ: it starts at λ0 = float32(1e-8) and is multiplied by 10 (float64) while
// the condition estimate exceeds κmax = 1e6 and λ < λmax. The expected λ comes from the estimate by hand:
//   - K=2, both planes the same 256 nonzero trits (the sign(w) start): A = [[N+λ, N], [N, N+λ]], N = 256,
//     κ = ‖A‖²_F/det ≈ 4N²/(2Nλ) = 512/λ, below 1e6 from λ = 5.12e-4 on: λ0·10⁵ (≈ 1e-3);
//   - K=3, planes 1 and 2 the same, plane 3 orthogonal to both (N = 256 nonzero each): κ ≈ ‖A‖_F/λ_min ≈
//     √(5N²)/λ = 572/λ: again λ0·10⁵;
//   - K=3 with disjoint supports (A diagonal, counts 1, 1, 100): κ ≈ 100·√2, no escalation, and α_p = b_p/(n_p+λ0);
//   - κmax = 1 can never be met: λ climbs to λmax = 1 exactly and stops there;
//   - K=1 never escalates: α = b/(n + λ0).
func TestLambdaRule(t *testing.T) {
	opt := DefaultOptions()
	l0 := float64(float32(1e-8))
	up5 := l0
	for range 5 {
		up5 = min(up5*10, 1)
	}
	_, lam := ridge(2, [3]int64{256, 256}, 256, 0, 0, [3]float64{10, 10}, opt)
	if lam != up5 {
		t.Errorf("K=2 rank-1: λ = %g, want λ0·10⁵ = %g", lam, up5)
	}
	alpha, _ := ridge(2, [3]int64{256, 256}, 256, 0, 0, [3]float64{10, 10}, opt)
	if want := 10 / (2*256 + up5); alpha[0] != alpha[1] || math.Abs(float64(alpha[0])-want) > 1e-6 {
		t.Errorf("K=2 rank-1: α = %v, want both b/(2N+λ) = %g", alpha, want)
	}
	if _, lam := ridge(3, [3]int64{256, 256, 256}, 256, 0, 0, [3]float64{1, 1, 1}, opt); lam != up5 {
		t.Errorf("K=3 two equal planes: λ = %g, want %g", lam, up5)
	}
	alpha, lam = ridge(3, [3]int64{1, 1, 100}, 0, 0, 0, [3]float64{0.5, -0.25, 30}, opt)
	if lam != l0 {
		t.Errorf("K=3 disjoint: λ = %g, want λ0 %g", lam, l0)
	}
	for p, want := range []float64{0.5 / (1 + l0), -0.25 / (1 + l0), 30 / (100 + l0)} {
		if math.Abs(float64(alpha[p])-want) > 1e-7 {
			t.Errorf("K=3 disjoint: α%d = %g, want %g", p+1, alpha[p], want)
		}
	}
	strict := opt
	strict.KappaMax = 1
	if _, lam := ridge(2, [3]int64{10, 10}, 0, 0, 0, [3]float64{1, 1}, strict); lam != 1 {
		t.Errorf("κmax 1: λ = %g, want λmax 1", lam)
	}
	alpha, lam = ridge(1, [3]int64{4}, 0, 0, 0, [3]float64{1}, strict)
	if lam != l0 || alpha[0] != float32(1/(4+l0)) {
		t.Errorf("K=1: α %g λ %g, want 1/(4+λ0) and λ0", alpha[0], lam)
	}
}

func groupTrits(n int) *[3][]int8 {
	return &[3][]int8{make([]int8, n), make([]int8, n), make([]int8, n)}
}

// TestSolveGroupOnHandCheckedGroups: small groups whose solution follows from the algorithm by hand (derivations in
// the comments).
func TestSolveGroupOnHandCheckedGroups(t *testing.T) {
	type want struct {
		alpha      [3]float64
		trits      [3][]int8
		iterations int
	}
	exact := DefaultOptions()
	exact.Lambda0 = 1.0 / 64 // exact in binary: the rank-1 start solves without rounding noise
	for _, tc := range []struct {
		name string
		w    []float32
		opt  Options
		k    int
		want want
	}{
		// K=1: sign start (+,−,+,−), n = 4, b = 1, α = 1/(4+λ0) = 0.25 in float32; the search keeps the trits, so
		// the second step gives the same α and stops (the first moved α from the start value 1).
		{"K=1 alternating", []float32{0.25, -0.25, 0.25, -0.25}, DefaultOptions(), 1,
			want{[3]float64{0.25}, [3][]int8{{1, -1, 1, -1}}, 2}},
		// K=1 with a zero and a NaN: both trit 0 and out of b; n = 3, b = 0.5+0.5+0.25 = 1.25, α = 1.25/3; 0.25 is
		// nearer α (0.1667 away) than 0 (0.25 away): trits (1, 0, 0, −1, 1), unchanged at step 2.
		{"K=1 zero and NaN", []float32{0.5, 0, float32(math.NaN()), -0.5, 0.25}, DefaultOptions(), 1,
			want{[3]float64{1.25 / 3}, [3][]int8{{1, 0, 0, -1, 1}}, 2}},
		// K=2: step 1 from equal planes (±1 everywhere): rank-1, λ escalates to ≈1e-5, α1 = α2 = 0.8/(8+λ) ≈ 0.1;
		// the search puts 0.3 at (1,1) = 0.2, ±0.1 at the first tuple worth ±α, (0,±1): the finer plane. Step 2:
		// t1 = (1,0,−1,0), t2 = (1,1,−1,−1): n = (2, 4), s12 = 2, b = (0.6, 0.8), det ≈ 4, κ ≈ 7, so
		// α1 = (0.6·4 − 0.8·2)/4 = 0.2, α2 = (0.8·2 − 0.6·2)/4 = 0.1: exact levels, same trits; step 3 repeats
		// and stops.
		{"K=2 two levels", []float32{0.3, 0.1, -0.3, -0.1}, DefaultOptions(), 2,
			want{[3]float64{0.2, 0.1}, [3][]int8{{1, 0, -1, 0}, {1, 1, -1, -1}}, 3}},
		// K=3, λ0 = 1/64: step 1 rank-1 (κ ≈ 12·√2·64 ≈ 1086, no escalation), α = 12/(12+λ) = 768/769 ≈ 0.9987 in
		// all planes: 5 is nearest 3α, (1,1,1); 1 is nearest α, first reached at (0,0,1). Step 2: n = (2, 2, 4),
		// s12 = s13 = s23 = 2, b = (10, 10, 12); by symmetry α1 = α2 = u, α3 = v with (4+λ)u + 2v = 10 and
		// 4u + (4+λ)v = 12: u = (16+10λ)/(8+8λ+λ²) = 66176/33281, v = (12−4u)/(4+λ) = 8618752/8553217; 5 stays
		// (1,1,1) (≈4.985) and 1 stays (0,0,1) (≈1.008); step 3 repeats and stops.
		{"K=3 two magnitudes", []float32{5, 5, 1, 1}, exact, 3,
			want{[3]float64{66176.0 / 33281, 66176.0 / 33281, 8618752.0 / 8553217},
				[3][]int8{{1, 1, 0, 0}, {1, 1, 0, 0}, {1, 1, 1, 1}}, 3}},
		// K=3 on equal weights: step 1 gives α = 2/(12+λ) = 128/769 in every plane and every weight (1,1,1) (3α ≈
		// 0.4994 is the nearest level to 0.5); step 2 repeats.
		{"K=3 equal weights", []float32{0.5, 0.5, 0.5, 0.5}, exact, 3,
			want{[3]float64{128.0 / 769, 128.0 / 769, 128.0 / 769}, [3][]int8{{1, 1, 1, 1}, {1, 1, 1, 1}, {1, 1, 1, 1}}, 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opt := tc.opt
			opt.Planes = tc.k
			tr := groupTrits(len(tc.w))
			res := SolveGroup(tc.w, tr, opt)
			if !res.Converged || res.Iterations != tc.want.iterations {
				t.Errorf("converged %v after %d iterations, want true after %d", res.Converged, res.Iterations, tc.want.iterations)
			}
			for p := range 3 {
				if math.Abs(float64(res.Alpha[p])-tc.want.alpha[p]) > 1e-6 {
					t.Errorf("α%d = %.9g, want %.9g", p+1, res.Alpha[p], tc.want.alpha[p])
				}
				if p < tc.k && !slices.Equal(tr[p], tc.want.trits[p]) {
					t.Errorf("plane %d trits %v, want %v", p+1, tr[p], tc.want.trits[p])
				}
			}
			if tc.k == 3 && res.Alpha[0] != res.Alpha[1] {
				t.Errorf("symmetric planes solved to different α: %v", res.Alpha)
			}
		})
	}
}

// TestSortedSearchEqualsExhaustive: the group search (weights in sorted order, the guard-band shortcut, the exact
// neighbour comparison) picks exactly what the pinned exhaustive search picks, on scales with coinciding levels,
// zeros, negatives, subnormals, huge and infinite values, and weights at, between, next to the midpoints of and
// beyond the levels, NaN and ±inf among them.
func TestSortedSearchEqualsExhaustive(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	pick := func() float32 {
		switch r.IntN(10) {
		case 0:
			return 0
		case 1:
			return float32(math.Inf(1 - 2*r.IntN(2)))
		case 2:
			return 1e-40 * float32(1+r.IntN(5)) // subnormal
		case 3:
			return 3e38 * float32(1-2*r.IntN(2))
		}
		return float32(r.NormFloat64() * 0.05)
	}
	checked := 0
	for trial := range 20000 {
		k := 1 + trial%3
		var alpha [3]float32
		for p := range k {
			alpha[p] = pick()
		}
		switch r.IntN(4) { // coinciding levels
		case 0:
			alpha[1] = alpha[0]
		case 1:
			alpha[0] = 2 * alpha[1]
		case 2:
			alpha[2] = alpha[1] + alpha[0]
		}
		var l levelSet
		l.init(k, alpha)
		w := make([]float32, 48)
		for i := range w {
			switch r.IntN(6) {
			case 0:
				w[i] = l.vals[r.IntN(l.n)]
			case 1: // midpoints, exact and float32-rounded
				a, b := l.vals[r.IntN(l.n)], l.vals[r.IntN(l.n)]
				w[i] = float32((float64(a) + float64(b)) / 2)
			case 2:
				a, b := l.vals[r.IntN(l.n)], l.vals[r.IntN(l.n)]
				w[i] = a/2 + b/2
			case 3:
				w[i] = math.Nextafter32(l.vals[r.IntN(l.n)], float32(math.Inf(1-2*r.IntN(2))))
			case 4:
				a, b := l.vals[r.IntN(l.n)], l.vals[r.IntN(l.n)]
				w[i] = math.Nextafter32(float32((float64(a)+float64(b))/2), float32(math.Inf(1-2*r.IntN(2))))
			default:
				w[i] = pick()
			}
		}
		var g group
		g.reset(w)
		l.search(&g)
		for i, v := range w {
			want := 0
			if isFinite(v) {
				want = l.nearestExhaustive(v)
				if got := l.nearest(v); got != want {
					t.Fatalf("K=%d α %v w %g: nearest %d %v, exhaustive %d %v", k, alpha, v, got, l.cands[got], want, l.cands[want])
				}
			}
			if int(g.ci[i]) != want {
				t.Fatalf("K=%d α %v w %g: search %d %v, exhaustive %d %v", k, alpha, v, g.ci[i], l.cands[g.ci[i]], want, l.cands[want])
			}
			checked++
		}
	}
	t.Logf("%d searches equal", checked)
}

func gaussian(r *rand.Rand, n int, scale float64) []float32 {
	w := make([]float32, n)
	for i := range w {
		w[i] = float32(r.NormFloat64() * scale)
	}
	return w
}

func relErr(w, rec []float32) float64 {
	var e, n float64
	for i, v := range w {
		if !isFinite(v) {
			continue
		}
		d := float64(v) - float64(rec[i])
		e += d * d
		n += float64(v) * float64(v)
	}
	return math.Sqrt(e / n)
}

// TestPlanesOnGaussianWeights: on Gaussian weights the error falls with K (K=3 below half of K=2, K=2 below K=1,
// K=1 below BitNet's absmean), the stats equal the error of the reconstruction the planes dequantize to, every
// plane is a valid block tensor (codes 0..2) with zeros in it, the planes differ from one another, and the Q2_0
// (64-group) planes do no worse than the TQ2_0 ones.
func TestPlanesOnGaussianWeights(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	const rows, cols = 8, 512
	w := gaussian(r, rows*cols, 0.02)
	rec := make([]float32, len(w))
	absmean := make([]byte, FormatTQ2_0.RowBytes(len(w)))
	if _, err := EncodeAbsmeanTQ2_0(w, absmean); err != nil {
		t.Fatal(err)
	}
	dequantize(FormatTQ2_0.Type, absmean, rec)
	errs := map[string]float64{"absmean": relErr(w, rec)}
	for _, g := range []int{256, 64} {
		for k := 1; k <= 3; k++ {
			opt := DefaultOptions()
			opt.Planes, opt.GroupSize = k, g
			s, st, err := QuantizeMatrix(w, rows, cols, opt, nil)
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Reconstruct(rec); err != nil {
				t.Fatal(err)
			}
			name := s.Format.Type.String() + " K=" + string(rune('0'+k))
			errs[name] = st.RelFrobErr
			if got := relErr(w, rec); math.Abs(got-st.RelFrobErr) > 1e-12 {
				t.Errorf("%s: stats say %g, the planes reconstruct to %g", name, st.RelFrobErr, got)
			}
			if st.Groups != rows*cols/g || st.MeanIterations < 1 || st.MeanIterations > 50 {
				t.Errorf("%s: %d groups, %g iterations", name, st.Groups, st.MeanIterations)
			}
			for p, plane := range s.Planes {
				if !(st.ZeroFrac[p] > 0 && st.ZeroFrac[p] < 1) {
					t.Errorf("%s: plane %d zero fraction %g", name, p, st.ZeroFrac[p])
				}
				for off := 0; off < len(plane); off += s.Format.BlockBytes {
					qs := plane[off : off+s.Format.BlockBytes-2]
					if s.Format.Type == FormatQ2_0.Type {
						qs = plane[off+2 : off+s.Format.BlockBytes]
					}
					for _, q := range qs {
						for n := range 4 {
							if q>>(2*n)&3 == 3 {
								t.Fatalf("%s: plane %d has code 3", name, p)
							}
						}
					}
				}
				if p > 0 && bytes.Equal(plane, s.Planes[p-1]) {
					t.Errorf("%s: planes %d and %d are equal", name, p-1, p)
				}
			}
		}
	}
	t.Logf("relative Frobenius errors: %v", errs)
	for _, f := range []string{"tq2_0", "q2_0"} {
		k1, k2, k3 := errs[f+" K=1"], errs[f+" K=2"], errs[f+" K=3"]
		if !(k3 < k2/2 && k2 < k1 && k1 < errs["absmean"]) {
			t.Errorf("%s: errors K=3 %g, K=2 %g, K=1 %g, absmean %g: not falling with K", f, k3, k2, k1, errs["absmean"])
		}
	}
	if errs["q2_0 K=2"] > errs["tq2_0 K=2"] {
		t.Errorf("64-weight groups (%g) worse than 256 (%g)", errs["q2_0 K=2"], errs["tq2_0 K=2"])
	}
}

// TestPlanesDoNotDependOnThreadsOrChunks: the planes and stats are the same bits on pools of 1, 2, 3 and 8 workers
// and when the rows arrive in uneven chunks.
func TestPlanesDoNotDependOnThreadsOrChunks(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	const rows, cols = 37, 512
	w := gaussian(r, rows*cols, 0.03)
	w[5] = float32(math.NaN())
	w[700] = float32(math.Inf(-1))
	for _, k := range []int{2, 3} {
		opt := DefaultOptions()
		opt.Planes = k
		base, baseStats, err := QuantizeMatrix(w, rows, cols, opt, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range []int{1, 2, 3, 8} {
			pool := parallel.New(n)
			s, err := NewPlaneSet(rows, cols, opt)
			if err != nil {
				t.Fatal(err)
			}
			for first := 0; first < rows; {
				m := min(rows-first, 1+first%5)
				if err := s.QuantizeRows(first, w[first*cols:(first+m)*cols], pool); err != nil {
					t.Fatal(err)
				}
				first += m
			}
			pool.Close()
			st, err := s.Stats()
			if err != nil {
				t.Fatal(err)
			}
			for p := range base.Planes {
				if !bytes.Equal(s.Planes[p], base.Planes[p]) {
					t.Fatalf("K=%d, %d workers: plane %d differs", k, n, p)
				}
			}
			if st != baseStats {
				t.Fatalf("K=%d, %d workers: stats %+v, want %+v", k, n, st, baseStats)
			}
		}
	}
}

// TestNonFiniteWeightsDegradeOnlyThemselves: a NaN or ±inf weight gets trit 0 in every plane and leaves the rest of
// its group as a 0 there would (Fucina's "NaN weights degrade to zero trits"), except that an inf enters the first
// Gram counts through its sign trit (so it is compared with a ±1 there, not a 0).
func TestNonFiniteWeightsDegradeOnlyThemselves(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	w := gaussian(r, 256, 0.02)
	withNaN, withZero, withInf := slices.Clone(w), slices.Clone(w), slices.Clone(w)
	withNaN[7], withZero[7] = float32(math.NaN()), 0
	withInf[9] = float32(math.Inf(1))
	opt := DefaultOptions()
	for k := 1; k <= 3; k++ {
		opt.Planes = k
		a, sa, _ := QuantizeMatrix(withNaN, 1, 256, opt, nil)
		b, sb, _ := QuantizeMatrix(withZero, 1, 256, opt, nil)
		for p := range a.Planes {
			if !bytes.Equal(a.Planes[p], b.Planes[p]) {
				t.Errorf("K=%d: a NaN gives plane %d unlike a 0 does", k, p)
			}
		}
		if sa.RelFrobErr != sb.RelFrobErr {
			t.Errorf("K=%d: NaN changes the error: %g vs %g", k, sa.RelFrobErr, sb.RelFrobErr)
		}
		c, sc, _ := QuantizeMatrix(withInf, 1, 256, opt, nil)
		if math.IsNaN(sc.RelFrobErr) || math.IsInf(sc.RelFrobErr, 0) {
			t.Errorf("K=%d: inf poisons the error: %g", k, sc.RelFrobErr)
		}
		tr := make([]float32, 256)
		if err := c.Reconstruct(tr); err != nil {
			t.Fatal(err)
		}
		if tr[9] != 0 {
			t.Errorf("K=%d: the inf weight reconstructs to %g, want 0", k, tr[9])
		}
		for i, v := range tr {
			if !isFinite(v) {
				t.Fatalf("K=%d: reconstruction %d is %g", k, i, v)
			}
		}
	}
}

// TestSpecialMatrices: an all-zero matrix packs to d = 0 and all codes 1 (0x55 bytes); an exactly ternary matrix
// (±0.5, 0) is recovered bit for bit by K=1, byte-identical to BitNet's scaled encoder at d = 0.5 (Fucina's test).
func TestSpecialMatrices(t *testing.T) {
	opt := DefaultOptions()
	s, st, err := QuantizeMatrix(make([]float32, 512), 2, 256, opt, nil)
	if err != nil {
		t.Fatal(err)
	}
	if st.RelFrobErr != 0 || st.ZeroFrac != [3]float64{1, 1, 0} {
		t.Errorf("zeros: %+v", st)
	}
	for _, plane := range s.Planes {
		for off := 0; off < len(plane); off += 66 {
			if !bytes.Equal(plane[off:off+64], bytes.Repeat([]byte{0x55}, 64)) || plane[off+64] != 0 || plane[off+65] != 0 {
				t.Fatalf("zero block %x", plane[off:off+66])
			}
		}
	}
	r := rand.New(rand.NewPCG(11, 12))
	w := make([]float32, 3*512)
	for i := range w {
		w[i] = 0.5 * float32(r.IntN(3)-1)
	}
	opt.Planes = 1
	s, st, err = QuantizeMatrix(w, 3, 512, opt, nil)
	if err != nil {
		t.Fatal(err)
	}
	rec := make([]float32, len(w))
	if err := s.Reconstruct(rec); err != nil {
		t.Fatal(err)
	}
	if st.RelFrobErr != 0 || !slices.Equal(rec, w) {
		t.Errorf("ternary matrix: error %g", st.RelFrobErr)
	}
	scaled := make([]byte, len(s.Planes[0]))
	if err := EncodeTQ2_0Scaled(w, 0.5, scaled); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(scaled, s.Planes[0]) {
		t.Error("K=1 planes differ from the scaled encoder at d = 0.5")
	}
}

// TestOptionsAndShapesAreChecked: bad options and shapes are errors naming the problem.
func TestOptionsAndShapesAreChecked(t *testing.T) {
	for _, mod := range []func(*Options){
		func(o *Options) { o.Planes = 0 }, func(o *Options) { o.Planes = 4 }, func(o *Options) { o.GroupSize = 128 },
		func(o *Options) { o.MaxIterations = 0 }, func(o *Options) { o.Epsilon = float32(math.NaN()) },
		func(o *Options) { o.Lambda0 = 0 }, func(o *Options) { o.LambdaMax = 1e-9 }, func(o *Options) { o.KappaMax = 0.5 },
	} {
		o := DefaultOptions()
		mod(&o)
		if _, err := NewPlaneSet(1, 256, o); err == nil {
			t.Errorf("%+v accepted", o)
		}
	}
	if _, err := NewPlaneSet(1, 320, DefaultOptions()); err == nil {
		t.Error("rows of 320 accepted for groups of 256")
	}
	s, _ := NewPlaneSet(2, 256, DefaultOptions())
	if err := s.QuantizeRows(1, make([]float32, 512), nil); err == nil {
		t.Error("rows past the end accepted")
	}
	if _, err := s.Stats(); err == nil {
		t.Error("stats of an unfinished matrix")
	}
	if _, _, err := QuantizeMatrix(make([]float32, 100), 1, 256, DefaultOptions(), nil); err == nil {
		t.Error("short matrix accepted")
	}
}

// TestAbsmeanEncoder: BitNet's scale is the mean |w| over the finite weights (at least 1e-5), every block stores
// it, and the trits are round-clip of w/d; NaN gives trit 0, ±inf ±1.
func TestAbsmeanEncoder(t *testing.T) {
	w := make([]float32, 512)
	for i := range w {
		w[i] = float32(i%4) * 0.1 // 0, 0.1, 0.2, 0.3: mean 0.15
	}
	w[10], w[11] = float32(math.NaN()), float32(math.Inf(-1))
	dst := make([]byte, 2*66)
	d, err := EncodeAbsmeanTQ2_0(w, dst)
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for i, v := range w {
		if i != 10 && i != 11 {
			sum += float64(v)
		}
	}
	if want := float32(sum / 510); d != want {
		t.Errorf("scale %g, want %g", d, want)
	}
	got := make([]float32, 512)
	quant.DequantizeRowTQ2_0(dst, got)
	hd := quant.FP16ToFP32(quant.FP32ToFP16(d))
	for i, v := range w {
		want := float32(math.Round(float64(v / d)))
		switch {
		case i == 10:
			want = 0
		case i == 11:
			want = -1
		}
		want = min(1, max(-1, want)) * hd
		if got[i] != want {
			t.Fatalf("weight %d (%g): %g, want %g", i, v, got[i], want)
		}
	}
	if AbsmeanScale([]float32{0, float32(math.NaN())}) != 1e-5 {
		t.Error("floor")
	}
	if err := EncodeTQ2_0Scaled(w, 0, dst); err == nil {
		t.Error("d = 0 accepted")
	}
}

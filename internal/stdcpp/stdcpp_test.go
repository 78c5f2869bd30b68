package stdcpp

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/bankml/bankml/internal/cshim"
)

// shimSrc exposes libstdc++'s algorithms, instantiated by the local g++ on
// the element type llama.cpp sorts (llama_token_data: id, logit, p) with the
// comparators llama.cpp uses, and its random machinery.
const shimSrc = `
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <random>

struct td { int32_t id; float logit; float p; };

static bool by_logit_desc(const td & a, const td & b) { return a.logit > b.logit; }

extern "C" {
void sort_td(td * a, size_t n) { std::sort(a, a + n, by_logit_desc); }
void partial_sort_td(td * a, size_t n, size_t mid) { std::partial_sort(a, a + mid, a + n, by_logit_desc); }
void nth_element_td(td * a, size_t n, size_t nth) { std::nth_element(a, a + nth, a + n, by_logit_desc); }
void sort_idx(size_t * idx, size_t n, const float * key) {
    std::sort(idx, idx + n, [&](size_t x, size_t y) { return key[x] < key[y]; });
}
void mt_out(uint32_t seed, size_t n, uint32_t * out) {
    std::mt19937 g(seed);
    for (size_t i = 0; i < n; i++) out[i] = g();
}
void uniform_f32(uint32_t seed, size_t n, float * out) {
    std::mt19937 g(seed);
    std::uniform_real_distribution<float> d(0.0f, 1.0f);
    for (size_t i = 0; i < n; i++) out[i] = d(g);
}
void uniform_f64(uint32_t seed, size_t n, double * out) {
    std::mt19937 g(seed);
    std::uniform_real_distribution<double> d(0.0f, 1.0f);
    for (size_t i = 0; i < n; i++) out[i] = d(g);
}
void uniform_f64_ab(uint32_t seed, size_t n, double a, double b, double * out) {
    std::mt19937 g(seed);
    std::uniform_real_distribution<double> d(a, b);
    for (size_t i = 0; i < n; i++) out[i] = d(g);
}
}
`

type td struct {
	ID    int32
	Logit float32
	P     float32
}

func byLogitDesc(a, b td) bool { return a.Logit > b.Logit }

type shim struct {
	sortTD        func(a *td, n uintptr)
	partialSortTD func(a *td, n, mid uintptr)
	nthElementTD  func(a *td, n, nth uintptr)
	sortIdx       func(idx *uintptr, n uintptr, key *float32)
	mtOut         func(seed uint32, n uintptr, out *uint32)
	uniformF32    func(seed uint32, n uintptr, out *float32)
	uniformF64    func(seed uint32, n uintptr, out *float64)
	uniformF64AB  func(seed uint32, n uintptr, a, b float64, out *float64)
}

func loadShim(t *testing.T) *shim {
	t.Helper()
	c := cshim.Build(t, "stdcpp", shimSrc)
	var s shim
	c.Func(t, &s.sortTD, "sort_td")
	c.Func(t, &s.partialSortTD, "partial_sort_td")
	c.Func(t, &s.nthElementTD, "nth_element_td")
	c.Func(t, &s.sortIdx, "sort_idx")
	c.Func(t, &s.mtOut, "mt_out")
	c.Func(t, &s.uniformF32, "uniform_f32")
	c.Func(t, &s.uniformF64, "uniform_f64")
	c.Func(t, &s.uniformF64AB, "uniform_f64_ab")
	return &s
}

// ptr returns a pointer to s[0] that is valid for an empty slice too.
func ptr[T any](s []T) *T {
	if len(s) == 0 {
		var z [1]T
		return &z[0]
	}
	return &s[0]
}

// inputs returns arrays of llama_token_data with many ties (few distinct
// logits), with distinct logits, sorted, reversed and constant, of the sizes
// the samplers see (tiny ones, around the insertion-sort threshold of 16 and
// the 128-element partial-sort cut, and vocabulary-sized ones).
func inputs(r *rand.Rand) [][]td {
	var out [][]td
	sizes := []int{0, 1, 2, 3, 4, 5, 7, 15, 16, 17, 18, 31, 32, 33, 40, 64, 100, 127, 128, 129, 200, 255, 256, 257, 500, 1000, 1025, 4096, 32000}
	for _, n := range sizes {
		for kind := range 6 {
			a := make([]td, n)
			for i := range a {
				var v float32
				switch kind {
				case 0: // heavy ties
					v = float32(r.IntN(4))
				case 1: // some ties
					v = float32(r.IntN(n+1)) / 4
				case 2: // distinct-ish floats
					v = float32(r.NormFloat64() * 3)
				case 3: // ascending
					v = float32(i)
				case 4: // descending
					v = float32(n - i)
				case 5: // constant
					v = 1
				}
				a[i] = td{ID: int32(i), Logit: v, P: float32(i)}
			}
			out = append(out, a)
		}
	}
	return out
}

func sameOrder(t *testing.T, what string, got, want []td) bool {
	t.Helper()
	for i := range got {
		if got[i] != want[i] {
			t.Errorf("%s (n=%d): position %d holds id %d, libstdc++ id %d", what, len(got), i, got[i].ID, want[i].ID)
			return false
		}
	}
	return true
}

// TestAlgorithmsMatchLibstdcxx: Sort, PartialSort and NthElement leave every
// input in exactly the order libstdc++'s std::sort, std::partial_sort and
// std::nth_element leave it, ties included.
func TestAlgorithmsMatchLibstdcxx(t *testing.T) {
	s := loadShim(t)
	r := rand.New(rand.NewPCG(1, 2))
	n, ok := 0, 0
	for _, in := range inputs(r) {
		check := func(what string, ours func([]td), theirs func([]td)) {
			a, b := append([]td(nil), in...), append([]td(nil), in...)
			ours(a)
			theirs(b)
			n++
			if sameOrder(t, what, a, b) {
				ok++
			}
		}
		check("sort", func(a []td) { Sort(a, byLogitDesc) }, func(b []td) { s.sortTD(ptr(b), uintptr(len(b))) })
		for _, mid := range []int{0, 1, 2, 16, 40, 128, len(in) / 2, len(in) - 1, len(in)} {
			if mid < 0 || mid > len(in) {
				continue
			}
			check("partial_sort", func(a []td) { PartialSort(a, mid, byLogitDesc) },
				func(b []td) { s.partialSortTD(ptr(b), uintptr(len(b)), uintptr(mid)) })
			if mid < len(in) {
				check("nth_element", func(a []td) { NthElement(a, mid, byLogitDesc) },
					func(b []td) { s.nthElementTD(ptr(b), uintptr(len(b)), uintptr(mid)) })
			}
		}
		// std::sort of indices by a float key, as llama_sampler_typical_apply sorts.
		key := make([]float32, len(in))
		for i, x := range in {
			key[i] = x.Logit
		}
		a := make([]uintptr, len(in))
		for i := range a {
			a[i] = uintptr(i)
		}
		b := append([]uintptr(nil), a...)
		Sort(a, func(x, y uintptr) bool { return key[x] < key[y] })
		s.sortIdx(ptr(b), uintptr(len(b)), ptr(key))
		n++
		if equal(a, b) {
			ok++
		} else {
			t.Errorf("index sort (n=%d) differs from libstdc++", len(in))
		}
	}
	t.Logf("libstdc++ algorithms: %d of %d orders identical", ok, n)
}

func equal[T comparable](a, b []T) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestSortAllNaNKeysStaysInBounds: a comparator that is no strict weak
// ordering (NaN keys, where libstdc++ is undefined) neither panics nor loses
// elements.
func TestSortAllNaNKeysStaysInBounds(t *testing.T) {
	nan := float32(math.NaN())
	for _, n := range []int{5, 17, 100, 1000} {
		a := make([]td, n)
		for i := range a {
			a[i] = td{ID: int32(i), Logit: nan}
			if i%3 == 0 {
				a[i].Logit = float32(i)
			}
		}
		Sort(a, byLogitDesc)
		seen := make([]bool, n)
		for _, x := range a {
			seen[x.ID] = true
		}
		for i, s := range seen {
			if !s {
				t.Fatalf("n=%d: id %d lost", n, i)
			}
		}
	}
}

// TestRandomMatchesLibstdcxx: MT19937's outputs and the float and double
// uniform distributions equal libstdc++'s, bit for bit, over many seeds and
// past several state refills.
func TestRandomMatchesLibstdcxx(t *testing.T) {
	s := loadShim(t)
	const n = 2000 // > 3 refills of the 624-word state
	seeds := []uint32{0, 1, 42, 5489, 1234, 0x7fffffff, 0x80000000, 0xfffffffe, 0xffffffff}
	r := rand.New(rand.NewPCG(3, 4))
	for range 20 {
		seeds = append(seeds, r.Uint32())
	}
	total, ok := 0, 0
	check := func(what string, seed uint32, want []uint64, next func(g *MT19937) uint64) {
		g := NewMT19937(seed)
		total++
		for i := range want {
			if got := next(g); got != want[i] {
				t.Errorf("seed %d: %s output %d = %#x, libstdc++ %#x", seed, what, i, got, want[i])
				return
			}
		}
		ok++
	}
	for _, seed := range seeds {
		u32 := make([]uint32, n)
		s.mtOut(seed, n, &u32[0])
		check("mt19937", seed, widen(u32, func(v uint32) uint64 { return uint64(v) }),
			func(g *MT19937) uint64 { return uint64(g.Uint32()) })
		f32 := make([]float32, n)
		s.uniformF32(seed, n, &f32[0])
		check("uniform<float>(0, 1)", seed, widen(f32, func(v float32) uint64 { return uint64(math.Float32bits(v)) }),
			func(g *MT19937) uint64 { return uint64(math.Float32bits(UniformReal32(g, 0, 1))) })
		f64 := make([]float64, n)
		s.uniformF64(seed, n, &f64[0])
		check("uniform<double>(0, 1)", seed, widen(f64, math.Float64bits),
			func(g *MT19937) uint64 { return math.Float64bits(UniformReal64(g, 0, 1)) })
		s.uniformF64AB(seed, n, -2.5, 7.25, &f64[0])
		check("uniform<double>(-2.5, 7.25)", seed, widen(f64, math.Float64bits),
			func(g *MT19937) uint64 { return math.Float64bits(UniformReal64(g, -2.5, 7.25)) })
	}
	t.Logf("libstdc++ random: %d of %d sequences identical", ok, total)
}

func widen[T any](s []T, f func(T) uint64) []uint64 {
	out := make([]uint64, len(s))
	for i, v := range s {
		out[i] = f(v)
	}
	return out
}

// TestGenerateCanonicalClampsToBelowOne: engine outputs of 2^32-1 (which
// round to 2^32 as a float, and two of which sum to 2^64 as a double) give the
// largest value below 1, never 1: the clamp of std::generate_canonical.
func TestGenerateCanonicalClampsToBelowOne(t *testing.T) {
	temper := func(z uint32) uint32 {
		z ^= z >> 11
		z ^= (z << 7) & 0x9d2c5680
		z ^= (z << 15) & 0xefc60000
		return z ^ z>>18
	}
	// Invert each tempering step by fixed-point iteration (each is z = y ^ f(z)
	// with f shifting bits strictly away, so 32 iterations converge).
	invert := func(y uint32, f func(uint32) uint32) uint32 {
		z := y
		for range 32 {
			z = y ^ f(z)
		}
		return z
	}
	y := uint32(math.MaxUint32)
	y = invert(y, func(z uint32) uint32 { return z >> 18 })
	y = invert(y, func(z uint32) uint32 { return (z << 15) & 0xefc60000 })
	y = invert(y, func(z uint32) uint32 { return (z << 7) & 0x9d2c5680 })
	word := invert(y, func(z uint32) uint32 { return z >> 11 })
	if temper(word) != math.MaxUint32 {
		t.Fatalf("untempering failed: %#x tempers to %#x", word, temper(word))
	}
	g := NewMT19937(1)
	g.genRand()
	g.x[0], g.x[1] = word, word
	if got := GenerateCanonical32(g); got != math.Nextafter32(1, 0) {
		t.Errorf("float: %g, want the largest float below 1", got)
	}
	g.p = 0
	if got := GenerateCanonical64(g); got != math.Nextafter(1, 0) {
		t.Errorf("double: %v, want the largest double below 1", got)
	}
}

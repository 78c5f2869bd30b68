package grammar

import (
	"math"
	"runtime"
	"slices"
	"testing"
	"time"
)

// benchDocument is the JSON text the mask benchmark feeds, token by token.
const benchDocument = `{"name": "Ada Lovelace", "born": 1815, "tags": ["math", "poetry", "engines"], "notes": {"first": "Note G", "ok": true, "ratio": -0.25e3}, "text": "She wrote: \"the engine might compose elaborate pieces of music\" — 日本語も。"}`

// newFresh builds g's grammar over a new automaton (not the Vocab's shared
// one), so that every state is met for the first time.
func newFresh(tb testing.TB, text string, v *Vocab) *Grammar {
	tb.Helper()
	g, err := New(text, v, Options{})
	if err != nil {
		tb.Fatal(err)
	}
	// the same text over an empty Vocab gives a new automaton; g keeps v's trie
	h, err := New(text, &Vocab{tok: v.tok, compiled: map[compiledKey]*compiled{}}, Options{})
	if err != nil {
		tb.Fatal(err)
	}
	g.c, g.cur = h.c, h.cur
	return g
}

// BenchmarkMask times the mask over the whole Qwen3 vocabulary (151,936
// tokens) before each token of a JSON document under the JSON-mode grammar,
// side by side with the reference's grammar sampler applied to the same
// vocabulary in the same state (llama_sampler_apply on every token, logits
// set to -Inf where refused): bankml on a fresh automaton per pass through
// the document (mask-first; a state met again within the pass has its mask
// kept), the same restricted to states never met before (mask-new-state),
// bankml once more in the same state (mask-again), and the reference. Each
// mask is applied to a row of logits. The medians per token are reported,
// in wall time and in the CPU time of the benchmark's thread (on Linux); the
// masks are checked equal on the way.
func BenchmarkMask(b *testing.B) {
	lib, shim := shimFor(b)
	vm := qwen3Vocab(b, lib)
	text, err := FromJSONSchema([]byte(`{"type": "object"}`), true)
	if err != nil {
		b.Fatal(err)
	}
	toks := vm.tok.Tokenize(benchDocument, false, true)
	all := make([]int32, vm.v.NVocab())
	for i := range all {
		all[i] = int32(i)
	}
	logits := make([]float32, len(all))
	apply := func(m *Mask) { // as package sample applies a mask: a word at a time
		for w, x := range m.Words() {
			if x == ^uint64(0) {
				continue
			}
			for b := range min(64, len(logits)-w*64) {
				if x&(1<<b) == 0 {
					logits[w*64+b] = float32(math.Inf(-1))
				}
			}
		}
	}
	vm.v.build()
	var cold, fresh, warm, ref, coldCPU, freshCPU, refCPU []time.Duration
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	for b.Loop() {
		g := newFresh(b, text, vm.v)
		rg, msg := shim.NewGrammar(vm.ref, text, "root", false, nil, nil)
		if rg == nil {
			b.Fatal(msg)
		}
		for _, tok := range toks {
			isNew := g.partial.NRemain > 0 || g.c.states[g.cur].mask == nil
			c0, t0 := threadCPU(), time.Now()
			m := g.Mask()
			apply(m)
			cold = append(cold, time.Since(t0))
			coldCPU = append(coldCPU, threadCPU()-c0)
			if isNew {
				fresh = append(fresh, time.Since(t0))
				freshCPU = append(freshCPU, threadCPU()-c0)
			}
			t0 = time.Now()
			m = g.Mask()
			apply(m)
			warm = append(warm, time.Since(t0))
			c0, t0 = threadCPU(), time.Now()
			want := rg.Apply(all)
			ref = append(ref, time.Since(t0))
			refCPU = append(refCPU, threadCPU()-c0)
			if m.Count() != countTrue(want) || !m.Allowed(tok) {
				b.Fatalf("masks differ: %d allowed, the reference %d", m.Count(), countTrue(want))
			}
			if err := g.Accept(tok); err != nil {
				b.Fatal(err)
			}
			if err := rg.Accept(tok); err != nil {
				b.Fatal(err)
			}
		}
		rg.Free()
	}
	med := func(d []time.Duration) float64 {
		s := slices.Clone(d)
		slices.Sort(s)
		return float64(s[len(s)/2]) / 1e6
	}
	b.ReportMetric(med(cold), "ms/mask-first")
	b.ReportMetric(med(fresh), "ms/mask-new-state")
	b.ReportMetric(float64(len(fresh))/float64(len(cold)), "new-state-share")
	b.ReportMetric(med(warm), "ms/mask-again")
	b.ReportMetric(med(ref), "ms/mask-reference")
	b.ReportMetric(med(ref)/med(cold), "x-first")
	b.ReportMetric(med(coldCPU), "cpu-ms/mask-first")
	b.ReportMetric(med(freshCPU), "cpu-ms/mask-new-state")
	b.ReportMetric(med(refCPU), "cpu-ms/mask-reference")
	b.ReportMetric(float64(len(toks)), "tokens/pass")
}

func countTrue(b []bool) int {
	n := 0
	for _, v := range b {
		if v {
			n++
		}
	}
	return n
}

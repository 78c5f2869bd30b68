package engine

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/bankml/bankml/internal/reftest"
	"github.com/bankml/bankml/model"
	"github.com/bankml/bankml/sample"
)

// TestSlotSaveRestore: a slot saved after a request and restored — into
// the same engine after an erase, and into a new engine (a restart) — makes
// the same request skip its prompt (cache_n: all but the last token) and
// answer exactly as a fresh engine and the reference do; erase reports the
// tokens dropped.
func TestSlotSaveRestore(t *testing.T) {
	tm := stories(t).withRef(t)
	const nCtx = 512
	dir := t.TempDir()
	file := filepath.Join(dir, "slot.bin")
	o := Options{NCtx: nCtx, Parallel: 2, AttnThreads: 1, ModelID: "sha256:stories"}
	text := sharedPrefix()[:400]
	req := Request{Prompt: Prompt{Text: text}, Sampling: withParams(func(p *sample.Params) { p.Seed = 5 }), NPredict: 16, CachePrompt: true, Slot: 1}
	prompt := tm.tok.Tokenize(text, true, true)

	fresh := newEngine(t, tm, Options{NCtx: nCtx, AttnThreads: 1})
	freq := req
	freq.Slot = -1
	want, err := fresh.Generate(context.Background(), freq, nil)
	if err != nil {
		t.Fatal(err)
	}
	s, err := tm.ref.NewSession(nCtx, 1)
	if err != nil {
		t.Fatal(err)
	}
	ra, err := reftest.Generate(tm.ref, s, reftest.Turn{Prompt: prompt, Sampling: req.Sampling, NPredict: req.NPredict})
	s.Close()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(want.Tokens, ra.Tokens) {
		t.Fatalf("fresh %v, reference %v", want.Tokens, ra.Tokens)
	}

	e := newEngine(t, tm, o)
	first, err := e.Generate(context.Background(), req, nil)
	if err != nil {
		t.Fatal(err)
	}
	saved, err := e.SaveSlot(context.Background(), 1, file)
	if err != nil {
		t.Fatal(err)
	}
	if saved.Tokens != first.NTokensCached || saved.Slot != 1 || saved.Bytes <= 0 {
		t.Fatalf("saved %+v after %d cached tokens", saved, first.NTokensCached)
	}
	n, err := e.EraseSlot(context.Background(), 1)
	if err != nil || n != saved.Tokens || e.Slots()[1].NPast != 0 {
		t.Fatalf("erase: %d tokens, %v; slot %+v", n, err, e.Slots()[1])
	}
	checks := 0
	check := func(name string, e *Engine) {
		t.Helper()
		got, err := e.RestoreSlot(context.Background(), 1, file)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got.Tokens != saved.Tokens || got.Bytes != saved.Bytes {
			t.Fatalf("%s: restored %+v, saved %+v", name, got, saved)
		}
		res, err := e.Generate(context.Background(), req, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(res.Tokens, want.Tokens) || res.Text != want.Text {
			t.Errorf("%s: %v, fresh %v", name, res.Tokens, want.Tokens)
		}
		if res.CachedTokens != len(prompt)-1 || res.Timings.PromptN != 1 {
			t.Errorf("%s: cache_n %d, prompt_n %d; want the prompt skipped (%d, 1)", name, res.CachedTokens, res.Timings.PromptN, len(prompt)-1)
		}
		checks++
		t.Logf("%s: %d tokens restored (%d bytes), cache_n %d of %d, the answer equals the fresh one and the reference's", name, got.Tokens, got.Bytes, res.CachedTokens, len(prompt))
	}
	check("same process", e)
	check("after a restart", newEngine(t, tm, o))
	t.Logf("%d of 2 restores answer as a fresh engine after skipping the prompt", checks)
}

// TestSlotRestoreRefuses: a slot file from another model, damaged by one
// bit anywhere, cut short, or missing is refused with a *RestoreError
// wrapping the reason, and leaves the slot empty; an invalid slot id and an
// engine without ModelID are refused too.
func TestSlotRestoreRefuses(t *testing.T) {
	tm := stories(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "slot.bin")
	o := Options{NCtx: 256, ModelID: "sha256:stories"}
	e := newEngine(t, tm, o)
	if _, err := e.Generate(context.Background(), shortRequest("Once upon a time"), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := e.SaveSlot(context.Background(), 0, file); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	write := func(b []byte) string {
		p := filepath.Join(dir, "bad.bin")
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	refused := 0
	expect := func(name string, e *Engine, path string, want error) {
		t.Helper()
		_, err := e.RestoreSlot(context.Background(), 0, path)
		var re *RestoreError
		if !errors.As(err, &re) || (want != nil && !errors.Is(err, want)) {
			t.Errorf("%s: %v, want a RestoreError wrapping %v", name, err, want)
			return
		}
		if e.Slots()[0].NPast != 0 {
			t.Errorf("%s: the slot holds %d tokens after a refused restore", name, e.Slots()[0].NPast)
		}
		refused++
	}
	other := newEngine(t, tm, Options{NCtx: 256, ModelID: "sha256:another"})
	expect("another model", other, file, model.ErrState)
	bits := []int{0, 7, 8 * 12, 8 * 40, len(data) * 4, len(data)*8 - 8*33, len(data)*8 - 1}
	for _, bit := range bits {
		b := slices.Clone(data)
		b[bit/8] ^= 1 << (bit % 8)
		expect("bit flipped", e, write(b), model.ErrState)
	}
	expect("cut short", e, write(data[:len(data)-100]), model.ErrState)
	expect("missing", e, filepath.Join(dir, "none.bin"), os.ErrNotExist)
	t.Logf("%d of %d damaged or foreign files refused", refused, 3+len(bits))
	if _, err := e.RestoreSlot(context.Background(), 0, file); err != nil {
		t.Fatalf("the intact file after the refusals: %v", err)
	}
	if _, err := e.SaveSlot(context.Background(), 1, file); !errors.Is(err, ErrInvalidSlot) {
		t.Errorf("slot 1 of 1: %v", err)
	}
	if _, err := newEngine(t, tm, Options{NCtx: 256}).SaveSlot(context.Background(), 0, file); !errors.Is(err, ErrNoModelID) {
		t.Errorf("no ModelID: %v", err)
	}
}

// TestPromptCacheRAM: with --cache-ram, a conversation whose one slot ran
// another conversation in between gets its cache back from host memory
// (llama-server's prompt cache: saved when the slot went to the other
// prompt by least-recent use, loaded for the prompt it keeps most of), and
// its answer equals the fresh one and the reference's; without it the
// turn reuses nothing.
func TestPromptCacheRAM(t *testing.T) {
	tm := stories(t).withRef(t)
	const nCtx = 512
	tokens := func(text string, bos bool) []int32 { return tm.tok.Tokenize(text, bos, false) }
	a1 := tokens(sharedPrefix()[:300], true)
	b1 := tokens("Tom had a big red ball. He liked to throw it high in the sky and catch it again. His mom called him and said that it was time to eat. Tom ran home with his ball and his dog.", true)
	req := func(p []int32) Request {
		return Request{Prompt: Prompt{Tokens: p}, Sampling: withParams(func(p *sample.Params) { p.Seed = 9 }), NPredict: 12, CachePrompt: true, Slot: -1}
	}
	for _, mib := range []int{0, -1} {
		t.Run(map[int]string{0: "without", -1: "with"}[mib], func(t *testing.T) {
			e := newEngine(t, tm, Options{NCtx: nCtx, AttnThreads: 1, CacheRAMMiB: mib})
			first, err := e.Generate(context.Background(), req(a1), nil)
			if err != nil {
				t.Fatal(err)
			}
			waitQuiet(t, e)
			if _, err := e.Generate(context.Background(), req(b1), nil); err != nil {
				t.Fatal(err)
			}
			waitQuiet(t, e)
			a2 := append(slices.Clone(a1), first.Tokens...)
			a2 = append(a2, tokens(" Then the dog ran to the park", false)...)
			res, err := e.Generate(context.Background(), req(a2), nil)
			if err != nil {
				t.Fatal(err)
			}
			fresh := newEngine(t, tm, Options{NCtx: nCtx, AttnThreads: 1})
			want, err := fresh.Generate(context.Background(), req(a2), nil)
			if err != nil {
				t.Fatal(err)
			}
			s, err := tm.ref.NewSession(nCtx, 1)
			if err != nil {
				t.Fatal(err)
			}
			ra, err := reftest.Generate(tm.ref, s, reftest.Turn{Prompt: a2, Sampling: req(a2).Sampling, NPredict: 12})
			s.Close()
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(res.Tokens, want.Tokens) || !slices.Equal(res.Tokens, ra.Tokens) {
				t.Errorf("%v; fresh %v, reference %v", res.Tokens, want.Tokens, ra.Tokens)
			}
			prev := len(a1) + len(first.Tokens)
			t.Logf("cache-ram %d MiB: the third request keeps %d of its %d prompt tokens (%.0f%% of the conversation's previous turn)", mib, res.CachedTokens, len(a2), 100*float64(res.CachedTokens)/float64(prev))
			if mib != 0 && float64(res.CachedTokens) < 0.9*float64(prev) {
				t.Errorf("with the prompt cache: cache_n %d of the previous turn's %d", res.CachedTokens, prev)
			}
			if mib == 0 && res.CachedTokens > 1 {
				t.Errorf("without the prompt cache: cache_n %d", res.CachedTokens)
			}
		})
	}
}

// TestSlotActionAfterLongAnswer: save and erase right after a long answer,
// while the idle slot is still settling the answer's cells, act on every
// token the slot holds, as llama-server's SLOT_SAVE and SLOT_ERASE do
// (n_saved and n_erased are slot->prompt.tokens.size(), the prompt and the
// answer but its last token: the result's tokens_cached); a save must not
// drop the tokens not settled yet.
func TestSlotActionAfterLongAnswer(t *testing.T) {
	tm := stories(t)
	dir := t.TempDir()
	o := Options{NCtx: 512, Parallel: 1, AttnThreads: 1, ModelID: "sha256:stories"}
	req := Request{Prompt: Prompt{Text: "Once upon a time"}, Sampling: withParams(func(p *sample.Params) { p.Seed = 5 }),
		NPredict: 300, IgnoreEOS: true, CachePrompt: true, Slot: 0}
	cases := []struct {
		name string
		act  func(e *Engine) (int, error)
	}{
		{"a save right after the answer writes every token the slot holds", func(e *Engine) (int, error) {
			f, err := e.SaveSlot(context.Background(), 0, filepath.Join(dir, "long.bin"))
			return f.Tokens, err
		}},
		{"an erase right after the answer counts every token the slot held", func(e *Engine) (int, error) {
			return e.EraseSlot(context.Background(), 0)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			caught := 0
			for round := range 5 {
				e := newEngine(t, tm, o)
				res, err := e.Generate(context.Background(), req, nil)
				if err != nil {
					t.Fatal(err)
				}
				if waitSettling(t, e, 0) {
					caught++
				}
				n, err := tc.act(e)
				if err != nil {
					t.Fatal(err)
				}
				if n != res.NTokensCached {
					t.Fatalf("round %d: the action covered %d tokens, the slot held %d (tokens_cached)", round, n, res.NTokensCached)
				}
			}
			if caught == 0 {
				t.Fatal("no round acted while the slot settled")
			}
		})
	}
}

// waitSettling waits until idle slot id is re-evaluating its last answer's
// cells (settle) with cells still to go, and reports true; false when the
// scheduler found nothing more to do first (it settled all meanwhile).
func waitSettling(t *testing.T, e *Engine, id int) bool {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		e.mu.Lock()
		n, quiet := len(e.slots[id].settle), e.quiet == e.releases
		e.mu.Unlock()
		if n > 0 {
			return true
		}
		if quiet {
			return false
		}
		runtime.Gosched()
	}
	t.Fatal("the slot neither settled nor went quiet")
	return false
}

// TestPromptCacheRAMSavesOnLowKeep: llama-server's get_available_slot
// updates the prompt cache not only for a slot taken by least-recent use
// but whenever the slot it gives keeps under half of its cached tokens
// (f_keep < 0.5): a slot picked by prompt similarity, or named by id_slot.
// The conversation that slot held is then saved to host memory, and its
// next turn gets it back.
func TestPromptCacheRAMSavesOnLowKeep(t *testing.T) {
	tm := stories(t)
	const nCtx = 512
	tokens := func(text string, bos bool) []int32 { return tm.tok.Tokenize(text, bos, false) }
	a1 := tokens(sharedPrefix()[:300], true)
	req := func(p []int32, slot int) Request {
		return Request{Prompt: Prompt{Tokens: p}, Sampling: withParams(func(p *sample.Params) { p.Seed = 9 }), NPredict: 12, CachePrompt: true, Slot: slot}
	}
	cases := []struct {
		name  string
		other []int32
		slot  int
	}{
		{"a prompt sharing a fifth of the slot's tokens, given the slot by similarity, saves the slot's conversation",
			tokens(sharedPrefix()[:60]+"Tom had a big red ball. He liked to throw it high in the sky and catch it again.", true), -1},
		{"a prompt given the slot by id_slot saves the slot's conversation",
			tokens("The cat sat on the mat. It was a sunny day and the birds were singing in the trees.", true), 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEngine(t, tm, Options{NCtx: nCtx, AttnThreads: 1, CacheRAMMiB: -1})
			first, err := e.Generate(context.Background(), req(a1, -1), nil)
			if err != nil {
				t.Fatal(err)
			}
			waitQuiet(t, e)
			if _, err := e.Generate(context.Background(), req(tc.other, tc.slot), nil); err != nil {
				t.Fatal(err)
			}
			waitQuiet(t, e)
			a2 := append(slices.Clone(a1), first.Tokens...)
			a2 = append(a2, tokens(" Then the dog ran to the park", false)...)
			res, err := e.Generate(context.Background(), req(a2, -1), nil)
			if err != nil {
				t.Fatal(err)
			}
			prev := len(a1) + len(first.Tokens)
			if float64(res.CachedTokens) < 0.9*float64(prev) {
				t.Errorf("cache_n %d of the previous turn's %d: the conversation was not saved to the prompt cache", res.CachedTokens, prev)
			}
		})
	}
}

// TestSlotSaveRightAfterALongAnswerKeepsEveryCell: a slot saved right
// after an answer of many tokens (while the idle slot settles them) holds
// every token the answer left, as llama-server's SLOT_SAVE saves the slot's
// whole prompt.tokens (n_saved = tokens_cached: the prompt and the generated
// tokens but the last), and a next turn restored from that file answers as
// a fresh evaluation does (TestSlotActionAfterLongAnswer makes sure the
// save can land mid-settle).
func TestSlotSaveRightAfterALongAnswerKeepsEveryCell(t *testing.T) {
	tm := stories(t)
	const nCtx = 512
	cases := []struct {
		name     string
		nPredict int
	}{
		{"an answer of 200 tokens", 200},
		{"an answer of 400 tokens", 400},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "slot.bin")
			o := Options{NCtx: nCtx, AttnThreads: 1, ModelID: "sha256:stories"}
			e := newEngine(t, tm, o)
			req := Request{Prompt: Prompt{Text: "Once upon a time"}, Sampling: greedyParams(), NPredict: c.nPredict, IgnoreEOS: true, CachePrompt: true, Slot: 0}
			first, err := e.Generate(context.Background(), req, nil)
			if err != nil {
				t.Fatal(err)
			}
			// Save while the idle slot settles the answer's cells (or once it
			// has settled them all, on a machine too quick to catch).
			waitSettling(t, e, 0)
			saved, err := e.SaveSlot(context.Background(), 0, file)
			if err != nil {
				t.Fatal(err)
			}
			if saved.Tokens != first.NTokensCached {
				t.Fatalf("saved %d tokens right after the answer; the slot held %d (tokens_cached)", saved.Tokens, first.NTokensCached)
			}
			next := req
			next.Prompt = Prompt{Text: "Once upon a time" + first.Text + " And then"}
			next.NPredict = 16
			fresh, err := newEngine(t, tm, Options{NCtx: nCtx, AttnThreads: 1}).Generate(context.Background(), next, nil)
			if err != nil {
				t.Fatal(err)
			}
			restored := newEngine(t, tm, o)
			if _, err := restored.RestoreSlot(context.Background(), 0, file); err != nil {
				t.Fatal(err)
			}
			res, err := restored.Generate(context.Background(), next, nil)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(res.Tokens, fresh.Tokens) {
				t.Errorf("the next turn on the restored slot: %v; fresh %v", res.Tokens, fresh.Tokens)
			}
		})
	}
}

package engine

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

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

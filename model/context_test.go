package model

import (
	"errors"
	"math"
	"path/filepath"
	"slices"
	"testing"

	"github.com/bankml/bankml/gguf"
)

// TestReusablePrefix: llama-server's rule (server_context::update_slots with
// cache_prompt): keep the common prefix, less one when it is the whole
// prompt.
func TestReusablePrefix(t *testing.T) {
	for _, tc := range []struct {
		cached, prompt []int32
		want           int
	}{
		{nil, []int32{1, 2, 3}, 0},
		{[]int32{1, 2, 3}, nil, 0},
		{[]int32{1, 2, 3}, []int32{1, 2, 3}, 2},       // whole prompt cached: one is evaluated again
		{[]int32{1, 2, 3, 4, 5}, []int32{1, 2, 3}, 2}, // a prefix of the cache
		{[]int32{1, 2, 3}, []int32{1, 2, 3, 4}, 3},    // the cache is a prefix
		{[]int32{1, 2, 9, 4}, []int32{1, 2, 3, 4}, 2},
		{[]int32{7}, []int32{1}, 0},
		{[]int32{1}, []int32{1}, 0},
	} {
		if got := ReusablePrefix(tc.cached, tc.prompt); got != tc.want {
			t.Errorf("ReusablePrefix(%v, %v) = %d, want %d", tc.cached, tc.prompt, got, tc.want)
		}
	}
}

// TestContextSize: llama-server's slot size: 0 is the training context,
// other sizes are padded to 256 (llama_context) and capped at the training
// context (server_context::n_ctx_slot).
func TestContextSize(t *testing.T) {
	m := loadModel(t, filepath.Join(modelsDir(t), "stories260K.gguf")) // n_ctx_train 2048
	for _, tc := range []struct {
		in, want int
		capped   bool
	}{{0, 2048, false}, {1, 256, false}, {256, 256, false}, {257, 512, false}, {2048, 2048, false}, {2049, 2048, true}, {1 << 30, 2048, true}} {
		got, capped, err := m.ContextSize(tc.in)
		if err != nil || got != tc.want || capped != tc.capped {
			t.Errorf("ContextSize(%d) = %d, %v, %v; want %d, %v", tc.in, got, capped, err, tc.want, tc.capped)
		}
	}
	for _, bad := range []int{-1, 1<<30 + 1} {
		if _, _, err := m.ContextSize(bad); err == nil {
			t.Errorf("ContextSize(%d): no error", bad)
		}
	}
}

// TestContextLimitsAndGrowth: the KV cache is allocated as cells are used
// (256 at a time, doubling), never past the context; a decode that does not
// fit fails with ErrContextFull and leaves the context as it was; CheckPrompt
// refuses a prompt of the context's size; Truncate keeps a prefix.
func TestContextLimitsAndGrowth(t *testing.T) {
	m := loadModel(t, filepath.Join(modelsDir(t), "stories260K.gguf"))
	if _, err := m.NewContext(1<<30, 1); err == nil && m.kvBytes(1<<30) > physicalMemory() {
		t.Error("a context whose KV cache exceeds the machine's memory: no error")
	}
	c := newCtx(t, m, 600, 1)
	perCell := m.kvBytes(1)
	if c.KVBytes() != 0 {
		t.Fatalf("a new context holds %d KV bytes", c.KVBytes())
	}
	toks := make([]int32, 300)
	for i := range toks {
		toks[i] = int32(3 + i%200)
	}
	if _, err := c.Decode(toks[:10]); err != nil {
		t.Fatal(err)
	}
	if c.KVBytes() != 256*perCell {
		t.Errorf("after 10 tokens: %d KV bytes, want 256 cells", c.KVBytes())
	}
	if _, err := c.Decode(toks[10:]); err != nil {
		t.Fatal(err)
	}
	if c.KVBytes() != 512*perCell {
		t.Errorf("after 300 tokens: %d KV bytes, want 512 cells", c.KVBytes())
	}
	if _, err := c.Decode(append(slices.Clone(toks), 5)); !errors.Is(err, ErrContextFull) {
		t.Errorf("301 more positions in a context of 600 after 300: %v, want ErrContextFull", err)
	}
	if c.NPast() != 300 || !slices.Equal(c.Tokens(), toks) {
		t.Errorf("a failed decode changed the context: %d positions", c.NPast())
	}
	if _, err := c.Decode(toks[:250]); err != nil {
		t.Fatal(err)
	}
	if c.KVBytes() != 768*perCell { // 550 cells: doubling is capped at 600 padded to 768
		t.Errorf("after 550 tokens: %d KV bytes, want 768 cells", c.KVBytes())
	}
	if err := c.CheckPrompt(600); !errors.Is(err, ErrContextFull) {
		t.Errorf("CheckPrompt(600) of a 600-token context: %v", err)
	}
	if err := c.CheckPrompt(599); err != nil {
		t.Errorf("CheckPrompt(599): %v", err)
	}
	if err := c.Truncate(551); err == nil {
		t.Error("Truncate past the cache: no error")
	}
	if err := c.Truncate(5); err != nil || c.NPast() != 5 || !slices.Equal(c.Tokens(), toks[:5]) {
		t.Errorf("Truncate(5): %v, %d positions", err, c.NPast())
	}
	if _, err := c.Decode([]int32{int32(m.HP.NVocab)}); err == nil {
		t.Error("a token outside the vocabulary: no error")
	}
	if _, err := c.Decode(nil); err == nil {
		t.Error("an empty batch: no error")
	}
}

// TestDecodeAllMatchesReference: the logits of every position of a batch
// (llama_batch.logits all set), bit for bit with the reference's, for a
// stories260K batch of two micro-batches (F32 and Q4_0) and an 80-token
// qwen3 batch (tiled attention, all rows through the last layer).
func TestDecodeAllMatchesReference(t *testing.T) {
	lib := refLib(t)
	check := func(name string, p *pair, toks []int32) {
		rs, err := p.ref.NewSession(0, 1)
		if err != nil {
			t.Fatal(err)
		}
		defer rs.Close()
		want, err := rs.DecodeAll(toks)
		if err != nil {
			t.Fatal(err)
		}
		c := newCtx(t, p.m, len(toks), oracleThreads())
		got, err := c.DecodeAll(toks)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) {
			t.Fatalf("%s: %d logits, reference %d", name, len(got), len(want))
		}
		nv := p.m.HP.NVocab
		rows := 0
		for r := range len(toks) {
			if slices.EqualFunc(got[r*nv:(r+1)*nv], want[r*nv:(r+1)*nv], func(a, b float32) bool { return math.Float32bits(a) == math.Float32bits(b) }) {
				rows++
			}
		}
		if rows != len(toks) {
			t.Errorf("%s: %d of %d logit rows bit-equal", name, rows, len(toks))
		}
		t.Logf("%s: %d of %d logit rows bit-equal", name, rows, len(toks))
	}
	for _, file := range []string{"stories260K.gguf", "derived/stories260K-Q4_0.gguf"} {
		path := filepath.Join(modelsDir(t), file)
		rm, err := lib.LoadModel(path)
		if err != nil {
			t.Fatal(err)
		}
		p := &pair{name: file, m: loadModel(t, path), ref: rm}
		toks, err := rm.Tokenize(longText(36), true, false)
		if err != nil {
			t.Fatal(err)
		}
		if len(toks) <= NUbatch {
			t.Fatalf("%d tokens: not two micro-batches", len(toks))
		}
		check(file, p, toks)
		rm.Close()
	}
	p := loadPair(t, lib, synthModel{arch: "qwen3", preset: "tiny", typ: gguf.Q2_0, yarn: true, seed: 2})
	toks := p.tokenize(t, chatML("", longChat(2)))[:80]
	check(p.name, p, toks)
}

package model

import (
	"fmt"
	"runtime"
	"slices"
	"strings"
	"testing"
	"unicode"

	"github.com/bankml/bankml/gguf"
	"github.com/bankml/bankml/internal/reference"
	"github.com/bankml/bankml/sample"
)

// The user messages of the short chat prompts (test input).
var shortChats = []struct{ system, user string }{
	{"", "Hello! Who are you?"},
	{"", "What is 17 times 23?"},
	{"You are a terse assistant.", "Translate 'good morning' into French."},
	{"", "Write a haiku about the sea."},
	{"", "  Is it safe to eat raw cookie dough? Answer yes or no, then explain."},
	{"You are a helpful assistant.", "List the planets of the solar system in order."},
}

// greedyModels are the synthetic models of the greedy oracles: the four
// weight types at the tiny shape, the bonsai head size with GQA at a tiny
// cost, and bonsai-1.7b as far as portable kernels allow in CI (every set
// under BANKML_ORACLE_HEAVY=1).
func greedyModels() []synthModel {
	ms := []synthModel{
		{arch: "qwen3", preset: "tiny", typ: gguf.Q1_0, yarn: true, seed: 1},
		{arch: "qwen3", preset: "tiny", typ: gguf.Q2_0, yarn: true, seed: 2},
		{arch: "qwen3", preset: "tiny", typ: gguf.TQ2_0, yarn: true, seed: 3},
		{arch: "qwen3", preset: "tiny", typ: gguf.F16, yarn: true, seed: 4},
		{arch: "qwen3", preset: "tiny-hd128", typ: gguf.Q1_0, yarn: true, seed: 8},
	}
	if heavy() {
		ms = append(ms,
			synthModel{arch: "qwen3", preset: "bonsai-1.7b", typ: gguf.Q1_0, yarn: true, seed: 12},
			synthModel{arch: "qwen3", preset: "bonsai-1.7b", typ: gguf.Q2_0, yarn: true, seed: 11},
			synthModel{arch: "qwen3", preset: "bonsai-1.7b", typ: gguf.TQ2_0, yarn: true, seed: 13},
			synthModel{arch: "qwen3", preset: "bonsai-1.7b", typ: gguf.F16, yarn: true, seed: 14})
	}
	return ms
}

// oracleThreads is the matmul pool of bankml's side in the oracle tests
// (results do not depend on it; the reference's thread count is mirrored by
// SetAttnThreads).
func oracleThreads() int { return min(2, runtime.GOMAXPROCS(0)) }

// refCtx is the reference context size of the greedy oracles: the model's
// training context (n_ctx 0, what llama-server's defaults give a slot) when
// its KV cache is small; 4096 for the bonsai shapes, whose 40960-cell cache
// the reference would allocate and clear (4.7 GB). The size changes no
// arithmetic while it holds the cells in use (attention reads
// min(n_ctx, max(256, used padded to 256)) cells).
func refCtx(p *pair) int {
	if p.m.kvBytes(p.m.HP.NCtxTrain) <= 256<<20 {
		return 0
	}
	return 4096
}

// session is one conversation on both sides: a reference Session and a
// bankml Context of the model's default size (ContextSize(0)).
type session struct {
	p   *pair
	ref *reference.Session
	c   *Context
}

func newSession(t testing.TB, p *pair, refThreads int) *session {
	t.Helper()
	rs, err := p.ref.NewSession(refCtx(p), refThreads)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rs.Close)
	size, _, err := p.m.ContextSize(0)
	if err != nil {
		t.Fatal(err)
	}
	c := newCtx(t, p.m, size, oracleThreads())
	c.SetAttnThreads(refThreads)
	return &session{p: p, ref: rs, c: c}
}

// turn evaluates prompt after the cached prefix both sides keep by
// llama-server's rule and generates up to n tokens greedily (stopping at an
// end-of-generation token when stopAtEOG, as a server turn ends). It checks
// that both sides keep the same number of cached tokens and generate the same
// tokens, and returns the tokens, the cached count and whether all agreed.
func (s *session) turn(t testing.TB, prompt []int32, n int, stopAtEOG bool) ([]int32, int, bool) {
	t.Helper()
	if err := s.c.CheckPrompt(len(prompt)); err != nil {
		t.Fatal(err)
	}
	refCached := ReusablePrefix(s.ref.Tokens(), prompt)
	if err := s.ref.Truncate(refCached); err != nil {
		t.Fatal(err)
	}
	logits, err := s.ref.Decode(prompt[refCached:])
	if err != nil {
		t.Fatal(err)
	}
	want, err := s.ref.Generate(logits, n, stopAtEOG)
	if err != nil {
		t.Fatal(err)
	}

	ok := true
	cached := s.c.Reuse(prompt)
	if cached != refCached {
		ok = false
		t.Errorf("%s: bankml keeps %d cached tokens, the reference's record %d", s.p.name, cached, refCached)
	}
	got, err := s.generate(prompt[cached:], n, stopAtEOG)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) {
		ok = false
		i := 0
		for i < len(got) && i < len(want) && got[i] == want[i] {
			i++
		}
		t.Errorf("%s, %d-token prompt (%d cached): tokens differ from position %d\n got %v\nwant %v", s.p.name, len(prompt), cached, i, got, want)
	}
	if !slices.Equal(s.c.Tokens(), s.ref.Tokens()) {
		ok = false
		t.Errorf("%s: bankml's cache holds %d tokens, the reference's %d (or others)", s.p.name, s.c.NPast(), len(s.ref.Tokens()))
	}
	return want, cached, ok
}

// generate is bankml's greedy loop, mirroring reference.Session.Generate.
func (s *session) generate(prompt []int32, n int, stopAtEOG bool) ([]int32, error) {
	logits, err := s.c.Decode(prompt)
	if err != nil {
		return nil, err
	}
	var out []int32
	for len(out) < n {
		next := sample.Greedy(logits)
		out = append(out, next)
		if len(out) == n || (stopAtEOG && refEOG(s.p.ref, next)) {
			break
		}
		if logits, err = s.c.Decode([]int32{next}); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// greedyBudget sizes the greedy oracles of one model: tokens generated for
// the short and the long prompts and how many long prompts run (of 6); the
// split-KV prompts (deepParas paragraphs of longChat and deepHurry + 2i more
// sentences: 244-256 tokens decode from under 256 cells to past 300, 275-287
// tokens decode in split-KV throughout) and how many run (of 3); whether the
// two-micro-batch prompt runs; tokens per conversation turn.
type greedyBudget struct {
	short, long, nLong          int
	deepParas, deepHurry, nDeep int
	twoUbatches                 bool
	turn                        int
}

// budgetFor keeps the oracles within their time: F16 files, whose portable
// f16 dot product is the slowest kernel, get shorter runs in CI; the
// bonsai-1.7b files (BANKML_ORACLE_HEAVY=1 only), whose prompts cost seconds
// per token with portable kernels, run every kind of case but fewer of the
// long ones (the micro-batch split itself is shape-independent and covered at
// the tiny shapes).
func budgetFor(s synthModel) greedyBudget {
	switch {
	case s.preset == "bonsai-1.7b":
		return greedyBudget{short: 8, long: 4, nLong: 2, deepParas: 5, deepHurry: 8, nDeep: 1, turn: 8}
	case s.typ == gguf.F16 && !heavy():
		return greedyBudget{short: 6, long: 4, nLong: 6, deepParas: 6, deepHurry: 4, nDeep: 3, twoUbatches: true, turn: 10}
	}
	return greedyBudget{short: 16, long: 8, nLong: 6, deepParas: 5, deepHurry: 8, nDeep: 3, twoUbatches: true, turn: 24}
}

// TestQwen3GreedyMatchesReference runs the greedy oracles of issue 6 on each
// model: 6 short chat prompts (16 tokens, or up to an end-of-generation
// token); 6 prompts of 110–160 tokens (tiled attention; 8 tokens); 3
// continuations that run past 300 KV cells (split-KV attention) with the
// reference on 1, 2 and 3 threads; a prompt of two micro-batches (fewer
// and shorter cases where budgetFor says). Each case runs in a fresh context
// of the default size on both sides.
func TestQwen3GreedyMatchesReference(t *testing.T) {
	lib := refLib(t)
	for _, s := range greedyModels() {
		t.Run(s.String(), func(t *testing.T) {
			p := loadPair(t, lib, s)
			b := budgetFor(s)
			var counts []string
			run := func(set string, prompts [][]int32, n int, threads []int, stopAtEOG bool, check func(prompt []int32, n int)) {
				ok, toks := 0, 0
				for i, prompt := range prompts {
					if check != nil {
						check(prompt, n)
					}
					ss := newSession(t, p, threads[i%len(threads)])
					got, _, same := ss.turn(t, prompt, n, stopAtEOG)
					ss.c.Close()
					ss.ref.Close()
					if same {
						ok++
					}
					toks += len(got)
				}
				counts = append(counts, fmt.Sprintf("%s %d of %d (%d tokens)", set, ok, len(prompts), toks))
			}

			var short [][]int32
			for _, c := range shortChats {
				short = append(short, p.tokenize(t, chatML(c.system, c.user)))
			}
			run("short chat prompts", short, b.short, []int{1}, true, nil)

			var long [][]int32
			for i := range b.nLong {
				sys := []string{"", "You are a helpful travel agent.", "Answer briefly."}[i%3]
				toks := p.tokenize(t, chatML(sys, longChat(2)+strings.Repeat(" Thanks!", 6+3*i)))
				long = append(long, toks)
			}
			run("prompts of 110-160 tokens", long, b.long, []int{1}, false, func(prompt []int32, _ int) {
				if len(prompt) < 110 || len(prompt) > 160 {
					t.Fatalf("long prompt of %d tokens, want 110-160", len(prompt))
				}
			})

			// Prompts of 200-300 tokens continued until the cache holds
			// more than 300 cells: every decode past 256 cells takes the
			// split-KV kernel (padded KV length 512), chunked for the
			// reference's 1, 2 and 3 threads.
			for i, threads := range []int{1, 2, 3}[:b.nDeep] {
				text := longChat(b.deepParas) + strings.Repeat(" Please hurry.", b.deepHurry+2*i)
				prompt := p.tokenize(t, chatML("", text))
				n := 302 - len(prompt)
				if len(prompt) < 200 || len(prompt) > 300 || n < 8 {
					t.Fatalf("deep case: %d-token prompt, want 200-294", len(prompt))
				}
				run(fmt.Sprintf("continuation past 300 cells (reference on %d threads)", threads), [][]int32{prompt}, n, []int{threads}, false, nil)
			}
			if b.twoUbatches { // a prompt of two micro-batches (512 + the rest)
				two := p.tokenize(t, chatML("", longChat(13)))
				if len(two) <= NUbatch || len(two) > 2*NUbatch {
					t.Fatalf("two-micro-batch prompt of %d tokens", len(two))
				}
				run("prompt of two micro-batches", [][]int32{two}, 4, []int{1}, false, nil)
			}
			t.Logf("%s: %s", p.name, strings.Join(counts, "; "))
		})
	}
}

// TestQwen3ConversationReusesCache runs a 3-turn chat in one context on each
// side, as a llama-server slot holds it: every turn's prompt is the whole
// conversation rendered again (ChatML, thinking off: the empty think block is
// rendered only in the generation prompt, not for earlier answers), each side
// keeps the prefix llama-server's rule keeps (ReusablePrefix of the cached
// tokens, which are the previous prompt and the generated tokens that were
// decoded), evaluates the rest and generates up to 24 tokens. The tokens,
// the cached counts and the cache contents must agree with the reference's,
// and each later turn must reuse exactly the previous prompt up to its
// "<|im_start|>assistant\n" (the think block is the part not rendered again).
func TestQwen3ConversationReusesCache(t *testing.T) {
	lib := refLib(t)
	for _, s := range greedyModels() {
		t.Run(s.String(), func(t *testing.T) {
			p := loadPair(t, lib, s)
			ss := newSession(t, p, 1)
			system := "You are a friendly assistant who answers in one short sentence."
			users := []string{"What colour is the sky on a clear day?", "And at sunset?", "Why does it change?"}
			var history []string
			var report []string
			agreed := 0
			for turn, u := range users {
				history = append(history, u)
				text := chatML(system, history...)
				prompt := p.tokenize(t, text)
				got, cached, same := ss.turn(t, prompt, budgetFor(s).turn, true)
				if same {
					agreed++
				}
				if turn > 0 {
					// The previous turn's prompt up to its assistant header,
					// which this prompt renders again before the answer.
					prev := chatML(system, history[:len(history)-2]...)
					prev = strings.TrimSuffix(prev, "<think>\n\n</think>\n\n")
					spec := len(p.tokenize(t, prev))
					if first := []rune(history[len(history)-2]); len(first) > 0 && (unicode.IsLetter(first[0]) || unicode.IsDigit(first[0])) && cached != spec {
						t.Errorf("turn %d: %d tokens taken from the cache, want %d (the previous prompt before its think block)", turn+1, cached, spec)
					}
				}
				report = append(report, fmt.Sprintf("turn %d: %d prompt tokens, %d from the cache, %d generated", turn+1, len(prompt), cached, len(got)))
				answer := p.detokenize(t, got)
				history = append(history, strings.TrimSpace(answer))
			}
			t.Logf("%s: %d of %d turns agree; %s", p.name, agreed, len(users), strings.Join(report, "; "))
		})
	}
}

// detokenize renders generated tokens as llama-server's content would carry
// them back (pieces without special tokens, end-of-generation tokens
// dropped): the next turn's input text.
func (p *pair) detokenize(t testing.TB, toks []int32) string {
	t.Helper()
	var b []byte
	for _, tok := range toks {
		if refEOG(p.ref, tok) {
			continue
		}
		piece, err := p.ref.TokenToPiece(tok, false)
		if err != nil {
			t.Fatal(err)
		}
		b = append(b, piece...)
	}
	return strings.ToValidUTF8(string(b), "\uFFFD")
}

// refEOG is the reference's llama_vocab_is_eog for tok (false if the model is closed).
func refEOG(m *reference.Model, tok int32) bool {
	eog, err := m.IsEOG(tok)
	return err == nil && eog
}

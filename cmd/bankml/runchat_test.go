package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/bankml/bankml/chat"
	"github.com/bankml/bankml/gguf"
	"github.com/bankml/bankml/internal/reference"
	"github.com/bankml/bankml/internal/synth"
	"github.com/bankml/bankml/internal/synthcache"
	"github.com/bankml/bankml/internal/testdata"
	"github.com/bankml/bankml/model"
)

// chatModel is the tiny Q1_0 qwen3 file with the real Qwen3 vocabulary and
// Bonsai's YaRN scaling that the model package's greedy oracles use (the same
// cached file).
func chatModel(t *testing.T) string {
	t.Helper()
	shape, err := synth.Preset("tiny")
	if err != nil {
		t.Fatal(err)
	}
	cfg := synth.Config{Arch: synth.ArchQwen3, Shape: shape, Weight: gguf.Q1_0, Embd: gguf.Q1_0, Output: gguf.Q1_0,
		Vocab: synthcache.Qwen3Vocab(t), Seed: 1, Metadata: []gguf.KV{
			{Key: "qwen3.rope.scaling.type", Value: gguf.StringValue("yarn")},
			{Key: "qwen3.rope.scaling.factor", Value: gguf.Float32Value(4)},
			{Key: "qwen3.rope.scaling.original_context_length", Value: gguf.Uint32Value(16384)},
		}}
	return synthcache.File(t, "qwen3-tiny-Q1_0-yarn", cfg)
}

// refTurn is one turn as the reference plays it.
type refTurn struct {
	prompt []int32
	cached int // the part of the reusable prefix a fresh evaluation computes alike in whole micro-batches
	// reusable is llama-server's reusable prefix (model.ReusablePrefix): bankml's exact reuse keeps at most
	// that much, and how much of it depends on whether the slot settled between turns.
	reusable int
	tokens   []int32 // greedy, up to n, ending at the first end-of-generation token
	answer   string  // the answer's pieces, end-of-generation tokens left out
}

// refChat plays a conversation the way a llama-server slot does with the
// reference doing every step: each turn's request ({"messages": [...]}, the
// system message first when given) is rendered with the model's template
// (package chat, byte-identical to llama-server's render by chat's oracle),
// tokenized by the reference as llama-server tokenizes a prompt (add_special,
// parse_special), checked against the context (a prompt of n_ctx tokens or
// more is refused and leaves the conversation as it was), then the session
// keeps the cached prefix bankml's engine keeps (the part of llama-server's
// reusable prefix computed in full micro-batches of model.NUbatch starting at
// multiples of it: what a fresh evaluation computes alike, so that every
// answer is a fresh llama-server's), decodes the rest and generates greedily.
// The answer's text joins the conversation.
// ns[i] bounds turn i's answer (the last value serves the later turns).
func refChat(t *testing.T, rm *reference.Model, tmpl *chat.Template, nCtx int, ns []int, system string, users []string) (turns []refTurn, refused []int) {
	t.Helper()
	rs, err := rm.NewSession(nCtx, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	type message struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	}
	var msgs []message
	aligned := 0 // the leading cached positions computed in full micro-batches from multiples of model.NUbatch
	if system != "" {
		msgs = append(msgs, message{"system", system})
	}
	for _, u := range users {
		next := append(slices.Clone(msgs), message{"user", u})
		body, err := json.Marshal(map[string]any{"messages": next})
		if err != nil {
			t.Fatal(err)
		}
		in, err := chat.ParseRequest(body)
		if err != nil {
			t.Fatal(err)
		}
		res, err := tmpl.Apply(in)
		if err != nil {
			t.Fatal(err)
		}
		prompt, err := rm.Tokenize(res.Prompt, true, true)
		if err != nil {
			t.Fatal(err)
		}
		if len(prompt) >= rs.NCtx() {
			refused = append(refused, len(prompt))
			continue
		}
		reusable := model.ReusablePrefix(rs.Tokens(), prompt)
		cached := min(reusable, aligned) / model.NUbatch * model.NUbatch
		aligned = cached
		if err := rs.Truncate(cached); err != nil {
			t.Fatal(err)
		}
		for aligned+model.NUbatch <= len(prompt) { // the prompt's full micro-batches from cached
			aligned += model.NUbatch
		}
		logits, err := rs.Decode(prompt[cached:])
		if err != nil {
			t.Fatal(err)
		}
		n := ns[min(len(turns), len(ns)-1)]
		toks, err := rs.Generate(logits, min(n, rs.NCtx()-len(prompt)), true)
		if err != nil {
			t.Fatal(err)
		}
		answer := refText(t, rm, toks)
		turns = append(turns, refTurn{prompt: prompt, cached: cached, reusable: reusable, tokens: toks, answer: string(answer)})
		msgs = append(next, message{"assistant", strings.ToValidUTF8(string(answer), "\uFFFD")})
	}
	return turns, refused
}

var turnLine = regexp.MustCompile(`(?m)^turn (\d+): prompt (\d+) tokens, (\d+) from the cache, \d+ evaluated .*; answer (\d+) tokens`)

// chatFixture is the chat model, loaded by the reference, and its template.
type chatFixture struct {
	path string
	rm   *reference.Model
	tmpl *chat.Template
}

func newChatFixture(t *testing.T) *chatFixture {
	t.Helper()
	lib, err := reference.Load()
	if err != nil {
		testdata.Absent(t, "reference not installed (run scripts/install-reference.sh): %v", err)
	}
	path := chatModel(t)
	rm, err := lib.LoadModel(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rm.Close)
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tmpl, err := chat.FromGGUF(f)
	if err != nil {
		t.Fatal(err)
	}
	return &chatFixture{path: path, rm: rm, tmpl: tmpl}
}

// checkTurns compares bankml's turns with the reference's: prompt tokens and
// answer tokens per turn, the cached count at most llama-server's reusable
// prefix (exact reuse keeps what its fresh evaluation computes alike); standard output must be the
// answers' text, each followed by a newline unless it is empty or ends in
// one; the summary lines on standard error carry the same counts. It
// returns how many turns agree in every respect and logs the count.
func checkTurns(t *testing.T, rm *reference.Model, want []refTurn, got []chatTurn, stdout, stderr string) int {
	t.Helper()
	ok := 0
	var wantOut strings.Builder
	for i, w := range want {
		wantOut.WriteString(w.answer)
		if w.answer != "" && !strings.HasSuffix(w.answer, "\n") {
			wantOut.WriteString("\n")
		}
		if i >= len(got) {
			t.Errorf("turn %d: bankml played no such turn", i+1)
			continue
		}
		g := got[i]
		same := true
		if !slices.Equal(g.Prompt, w.prompt) {
			same = false
			t.Errorf("turn %d: prompt tokens differ\n got %v\nwant %v", i+1, g.Prompt, w.prompt)
		}
		if g.Cached > w.reusable {
			same = false
			t.Errorf("turn %d: %d tokens from the cache, more than llama-server's reusable prefix %d", i+1, g.Cached, w.reusable)
		}
		if !slices.Equal(g.Tokens, w.tokens) {
			same = false
			t.Errorf("turn %d: answer tokens differ\n got %v\nwant %v", i+1, g.Tokens, w.tokens)
		}
		if same {
			ok++
		}
	}
	if len(got) != len(want) {
		t.Errorf("bankml played %d turns, the reference %d", len(got), len(want))
	}
	if stdout != wantOut.String() {
		t.Errorf("standard output:\n got %q\nwant %q", stdout, wantOut.String())
	}
	lines := turnLine.FindAllStringSubmatch(stderr, -1)
	if len(lines) != len(want) {
		t.Errorf("%d summary lines for %d turns; stderr:\n%s", len(lines), len(want), stderr)
	}
	for i, m := range lines[:min(len(lines), len(want))] {
		w := want[i]
		answer := len(w.tokens)
		if n := len(w.tokens); n > 0 && refEOG(rm, w.tokens[n-1]) {
			answer--
		}
		cached := -1
		if i < len(got) {
			cached = got[i].Cached
		}
		if m[1] != strconv.Itoa(i+1) || m[2] != strconv.Itoa(len(w.prompt)) || m[3] != strconv.Itoa(cached) || m[4] != strconv.Itoa(answer) {
			t.Errorf("summary %q; want turn %d, prompt %d, cached %d, answer %d", m[0], i+1, len(w.prompt), cached, answer)
		}
	}
	var report []string
	for _, w := range want {
		report = append(report, fmt.Sprintf("%d/%d/%d", len(w.prompt), w.reusable, len(w.tokens)))
	}
	t.Logf("%d of %d turns equal the reference's (prompt/reusable/answer tokens %s)", ok, len(want), strings.Join(report, ", "))
	return ok
}

// runChat runs bankml run --chat on the fixture with args and stdin,
// collecting its turns.
func (fx *chatFixture) runChat(stdin io.Reader, args ...string) (code int, turns []chatTurn, stdout, stderr string) {
	var o bytes.Buffer
	e := &syncBuffer{}
	args = append([]string{"run", fx.path, "--chat", "-t", "2"}, args...)
	code = run(args, stdin, &o, e, func(c *cli) {
		c.Run.onTurn = func(t chatTurn) { turns = append(turns, t) }
	})
	return code, turns, o.String(), e.String()
}

// syncBuffer is a bytes.Buffer safe for one writer and concurrent readers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestRunChatMatchesReference: bankml run --chat with piped standard input
// on a tiny qwen3 file with the real Qwen3 vocabulary plays every turn as
// the reference does (refChat, checkTurns). The cases cover --system present
// and absent, a line continued with "\", an empty line, /exit (and the lines
// after it never sent), the end of input, -p as the first message,
// --single-turn, a message that does not fit the context (refused naming
// both sizes, the conversation intact, exit status 1), and an answer that
// fills the context (stopped there, saying so with the sizes; the next
// message refused).
func TestRunChatMatchesReference(t *testing.T) {
	fx := newChatFixture(t)
	long := strings.Repeat("Tell me everything about the history of the river, its bridges and its mills. ", 20)
	fill := strings.Repeat("Tell me about the river and its mills. ", 24) // a prompt of about 230 tokens: the answer fills the rest
	for _, tc := range []struct {
		name   string
		args   []string
		stdin  string
		system string
		users  []string // the messages the conversation receives, in order
		nCtx   int
		n      int
		code   int
		full   bool // the first answer fills the context
	}{
		{name: "system, three turns, end of input", args: []string{"--system", "You are a friendly assistant who answers in one short sentence.", "-n", "24"},
			stdin:  "What colour is the sky on a clear day?\nAnd at sunset?\\\nAnswer briefly.\n\nWhy does it change?",
			system: "You are a friendly assistant who answers in one short sentence.",
			users:  []string{"What colour is the sky on a clear day?", "And at sunset?\nAnswer briefly.", "Why does it change?"}, n: 24},
		{name: "no system, -p first, /exit", args: []string{"-p", "Hello! Who are you?", "-n", "16"},
			stdin: "Tell me more.\n/exit now\nNever sent.\n",
			users: []string{"Hello! Who are you?", "Tell me more."}, n: 16},
		{name: "single turn", args: []string{"-p", "What is 17 times 23?", "--single-turn", "-n", "8"},
			stdin: "Not read.\n", users: []string{"What is 17 times 23?"}, n: 8},
		{name: "a message that does not fit", args: []string{"-c", "256", "-n", "20"},
			stdin: "Hi.\n" + long + "\nThanks.\n", users: []string{"Hi.", long, "Thanks."}, nCtx: 256, n: 20, code: 1},
		{name: "an answer that fills the context", args: []string{"-c", "256"},
			stdin: fill + "\nAnd then?\n", users: []string{fill, "And then?"}, nCtx: 256, n: 1 << 20, code: 1, full: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want, refused := refChat(t, fx.rm, fx.tmpl, tc.nCtx, []int{tc.n}, tc.system, tc.users)
			code, got, stdout, stderr := fx.runChat(strings.NewReader(tc.stdin), tc.args...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d; stderr:\n%s", code, tc.code, stderr)
			}
			checkTurns(t, fx.rm, want, got, stdout, stderr)
			for _, n := range refused {
				if !strings.Contains(stderr, fmt.Sprintf("prompt is %d tokens and the context 256", n)) || !strings.Contains(stderr, "kept as it was") {
					t.Errorf("the refused %d-token prompt: stderr does not name both sizes (%d and 256):\n%s", n, n, stderr)
				}
			}
			if tc.full && len(want) > 0 {
				msg := fmt.Sprintf("the prompt's %d and the answer's %d tokens fill its %d", len(want[0].prompt), len(want[0].tokens), tc.nCtx)
				if !strings.Contains(stderr, msg) {
					t.Errorf("stderr does not say %q:\n%s", msg, stderr)
				}
			}
			if len(refused) != strings.Count(stderr, "kept as it was") {
				t.Errorf("the reference refuses %d messages, bankml (stderr):\n%s", len(refused), stderr)
			}
		})
	}
}

// TestRunChatRefusesFlagsWithoutChat: --system and --single-turn only make
// sense in a conversation.
func TestRunChatRefusesFlagsWithoutChat(t *testing.T) {
	for _, args := range [][]string{{"--system", "x"}, {"--single-turn"}} {
		code, _, stderr := runCLI(append([]string{"run", "no-such.gguf", "-p", "hi"}, args...)...)
		if code != 1 || !strings.Contains(stderr, "need --chat") {
			t.Errorf("%v: exit %d, stderr %q; want 1 naming --chat", args, code, stderr)
		}
	}
}

// TestRunChatInterruptsBetweenAnswers: a Ctrl-C that comes while no answer
// is generated and no line is read is kept: it ends the next read before
// anything is read, or stops the answer about to start; a first Ctrl-C during
// an answer stops it and every answer starts without an earlier one counted.
func TestRunChatInterruptsBetweenAnswers(t *testing.T) {
	for _, tc := range []struct {
		name string
		do   func(t *testing.T, c *chatInterrupts)
	}{
		{"a kept Ctrl-C ends the next terminal read", func(t *testing.T, c *chatInterrupts) {
			c.signal(io.Discard)
			if c.startReading(func() {}) {
				t.Error("the read started")
			}
			if !c.startReading(func() {}) {
				t.Error("the Ctrl-C was kept for the read after")
			}
		}},
		{"a kept Ctrl-C ends the next read of piped input", func(t *testing.T, c *chatInterrupts) {
			c.signal(io.Discard)
			r := newLineReader(strings.NewReader("a line already there\n"), c)
			if msg, err := r.readMessage(); err != io.EOF {
				t.Errorf("read %q, %v; want io.EOF", msg, err)
			}
		}},
		{"a kept Ctrl-C stops the answer about to start", func(t *testing.T, c *chatInterrupts) {
			c.signal(io.Discard)
			ctx, cancel := context.WithCancel(context.Background())
			c.startAnswer(cancel)
			if ctx.Err() == nil {
				t.Error("the answer was not stopped")
			}
			c.endAnswer()
			if !c.startReading(func() {}) {
				t.Error("the Ctrl-C was kept for the read after")
			}
		}},
		{"each answer's first Ctrl-C stops it", func(t *testing.T, c *chatInterrupts) {
			for i := range 3 {
				ctx, cancel := context.WithCancel(context.Background())
				c.startAnswer(cancel)
				if ctx.Err() != nil {
					t.Fatalf("answer %d stopped before a Ctrl-C", i+1)
				}
				c.signal(io.Discard) // a second one would exit (status 130)
				if ctx.Err() == nil {
					t.Fatalf("answer %d not stopped", i+1)
				}
				c.endAnswer()
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.do(t, &chatInterrupts{}) })
	}
}

// TestRunChatTakesOllamasCommands: in run --chat, /bye ends the conversation as /exit does (Ollama's command
// to leave a chat), /? and /help print the commands on standard error; none of them is sent to the model,
// and the lines after /bye are never read as messages.
func TestRunChatTakesOllamasCommands(t *testing.T) {
	model := storiesPath(t)
	for _, c := range []struct {
		name  string
		stdin string
		turns int  // the messages answered
		help  bool // the commands printed
	}{
		{"/bye after one message ends the conversation there", "Hi.\n/bye\nNever sent.\n", 1, false},
		{"/bye first answers nothing", "/bye\nNever sent.\n", 0, false},
		{"/exit still ends it", "/exit\nNever sent.\n", 0, false},
		{"/? prints the commands and the conversation goes on", "/?\nHi.\n", 1, true},
		{"/help prints the commands and is not sent", "/help\n/bye\n", 0, true},
		{"a message that only mentions /bye later is sent", "Say /bye.\n", 1, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			var turns int
			var o, e bytes.Buffer
			code := run([]string{"run", model, "--chat", "-n", "4"}, strings.NewReader(c.stdin), &o, &e, func(cl *cli) {
				cl.Run.onTurn = func(chatTurn) { turns++ }
			})
			help := strings.Contains(e.String(), "/bye, /exit    end the conversation")
			if code != 0 || turns != c.turns || help != c.help {
				t.Errorf("stdin %q: exit %d, %d turns, help printed %v; want exit 0, %d turns, help %v; stderr:\n%s",
					c.stdin, code, turns, help, c.turns, c.help, e.String())
			}
		})
	}
}

// TestChatClearForgetsTheConversationSoFar: in run --chat, /clear (Ollama's command) forgets the conversation so
// far, the system message kept, and is not sent: the next message is answered as the first one of a new
// conversation. When an answer fills the context, its summary says so and suggests /clear, and a message the
// conversation no longer fits is refused suggesting it too; after /clear the conversation goes on.
func TestChatClearForgetsTheConversationSoFar(t *testing.T) {
	model := storiesPath(t)
	fill := strings.Repeat("Tell me a story about a cat. ", 10) // about 200 tokens: with --ignore-eos the answer fills 256
	for _, c := range []struct {
		name    string
		args    []string
		stdin   string
		code    int
		answers int      // the turns answered
		same    [][2]int // turns (from 1) whose prompts are equal
		stderr  []string // in standard error
	}{
		{name: "/clear forgets the turns and keeps the system message", args: []string{"--system", "Be kind.", "-n", "6"},
			stdin: "Hello.\nAnd then?\n/clear\nHello.\n", answers: 3, same: [][2]int{{1, 3}},
			stderr: []string{"cleared the conversation; the system message is kept"}},
		{name: "/clear without a system message", args: []string{"-n", "6"},
			stdin: "Hello.\n/clear\nHello.\n", answers: 2, same: [][2]int{{1, 2}}},
		{name: "/clear at the start changes nothing", args: []string{"-n", "6"},
			stdin: "/clear\nHello.\n", answers: 1},
		{name: "a full context is said, /clear suggested, and /clear goes on", args: []string{"-c", "256", "--ignore-eos"},
			stdin: fill + "\nAnd then?\n/clear\n" + fill + "\n", code: 1, answers: 2, same: [][2]int{{1, 2}},
			stderr: []string{"tokens fill its 256): /clear forgets the conversation so far to go on",
				"the context 256: it must be shorter than the context; the conversation is kept as it was: /clear forgets it (the system message kept), or a larger --ctx-size holds more"}},
		{name: "/? lists /clear", args: []string{"-n", "4"}, stdin: "/?\n", stderr: []string{"/clear         forget the conversation so far"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var turns []chatTurn
			var o, e bytes.Buffer
			code := run(append([]string{"run", model, "--chat", "-t", "1"}, c.args...), strings.NewReader(c.stdin), &o, &e, func(cl *cli) {
				cl.Run.onTurn = func(t chatTurn) { turns = append(turns, t) }
			})
			if code != c.code || len(turns) != c.answers {
				t.Fatalf("exit %d, %d turns; want exit %d, %d turns; stderr:\n%s", code, len(turns), c.code, c.answers, e.String())
			}
			for _, p := range c.same {
				if a, b := turns[p[0]-1], turns[p[1]-1]; !slices.Equal(a.Prompt, b.Prompt) || !slices.Equal(a.Tokens, b.Tokens) {
					t.Errorf("turn %d (prompt %d tokens) and turn %d (prompt %d tokens) differ: the conversation was not cleared", p[0], len(a.Prompt), p[1], len(b.Prompt))
				}
			}
			for _, w := range c.stderr {
				if !strings.Contains(e.String(), w) {
					t.Errorf("stderr does not say %q:\n%s", w, e.String())
				}
			}
		})
	}
}

package main

// bankml run --chat: a conversation with a model, as llama-cli v0.5.0
// (tools/cli) holds one through the llama-server it starts, and as the
// server's slot evaluates it.
//
// What each turn does (llama-cli's cli_context::run and generate_completion,
// the server's /v1/chat/completions with its defaults):
//   - the conversation (the --system message when given, every earlier user
//     message and answer, the new user message) goes through chat.ParseRequest
//     and Template.Apply, as the server renders the request llama-cli sends
//     ({"messages": [...]}): the model's template, enable_thinking at the
//     server's default, the generation prompt added;
//   - the rendered prompt is tokenized segment by segment (special-token
//     parsing only in template text, the BOS the tokenizer adds once: see
//     package chat's Segments), refused when it does not leave room for one
//     token (Context.CheckPrompt: the error names both sizes; the conversation
//     stays as it was), and the cached prefix is kept by llama-server's rule
//     (Context.Reuse), the rest evaluated;
//   - the answer is sampled with run's flags (llama.cpp's sampler chain, a
//     new chain per turn with the prompt as its history, as the server builds
//     one per request) until an end-of-generation token, -n tokens, or a full
//     context, streamed to standard output; the last sampled token is not
//     decoded (the server ends a turn so), so the cache holds the prompt and
//     the answer's other tokens;
//   - the user message and the answer's text join the conversation.
//
// Input (llama-cli's console, common/console.cpp): on a terminal, lines are
// edited with golang.org/x/term (history, cursor keys) after a "> " marker on
// standard error; not on a terminal, each line of standard input is one user
// message, as llama.cpp's console reads piped input in both of its modes
// (readline_advanced, llama-cli's default, and readline_simple with
// --simple-io): a line is a message, a line ending in "\" continues the
// message on the next line, joined with "\n". Either way an empty message is
// skipped, a message starting with "/exit" ends the conversation (llama-cli's
// prefix test), and the end of input ends it: Ctrl-D on an empty line on a
// terminal, the end of piped input otherwise. That last rule is
// llama-completion's conversation mode ("EOF by user"); llama-cli v0.5.0
// itself skips the empty read and prompts again, forever (cli_context::run
// never tests for the end of input; Ctrl-D on a terminal likewise only gives
// a new prompt there), which a program reading a script cannot follow. Ctrl-C while an answer is generated stops that answer (the text so
// far joins the conversation, as llama-cli keeps it), a second Ctrl-C before
// it stops exits with status 130, and Ctrl-C while a message is read ends the
// conversation, as in llama-cli. -p is the first user message (llama-cli's -p
// with its conversation); the conversation then goes on reading standard
// input, which at its end (a script's empty input) exits; --single-turn stops
// after the first answer (llama-cli's -st).
//
// Output: standard output carries the answers' text only, each followed by a
// newline unless it is empty or ends in one (llama-cli's assistant_turn);
// the prompt marker, the banner and a summary line per turn (prompt tokens,
// how many came from the cache, answer tokens, speeds, why the answer
// stopped) go to standard error.
//
// Deliberate differences: llama-server parses the answer with the template's
// output parser (reasoning into reasoning_content, tool calls); bankml prints
// and keeps the answer's text as the model wrote it (Qwen3's template itself
// drops an earlier answer's think block when it renders the conversation
// again), and does not implement llama-cli's other commands (/regen, /clear,
// /read, /glob, media). A message or answer that is not valid UTF-8 cannot
// be sent as JSON: a message is refused, an answer's invalid bytes become
// U+FFFD in the conversation (not on standard output). A line ending in "/"
// keeps its "/" (llama.cpp's console drops it in both modes, its marker for
// "return control", which with one line per message changes nothing else but
// the text). When standard input is not a terminal, a refused message makes
// the exit status 1 once the conversation ends.

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"golang.org/x/term"

	"github.com/bankml/bankml/chat"
	"github.com/bankml/bankml/gguf"
	"github.com/bankml/bankml/model"
	"github.com/bankml/bankml/sample"
	"github.com/bankml/bankml/tokenizer"
)

// chatTurn is what one turn did.
type chatTurn struct {
	N      int     // the turn's number, from 1
	Prompt []int32 // the tokens of the rendered conversation
	Cached int     // how many of them were kept in the cache (llama-server's timings.cache_n)
	Tokens []int32 // the sampled tokens, a final end-of-generation token included
	Answer string  // the answer's text as it joins the conversation
	Stop   string  // why the answer stopped: "eog", "n-predict", "context" or "interrupt"

	nCtx          int    // the context size
	seed          string // the draw's seed when the chain draws at random (drawsAtRandom), else ""
	tPrompt, tGen time.Duration
	decodes       int
}

// chatSession is one conversation in one model context.
type chatSession struct {
	tmpl      *chat.Template
	tok       tokenizer.Tokenizer
	c         *model.Context
	sp        sample.Params
	sm        sample.Model
	nPredict  int
	ignoreEOS bool

	messages []chat.Message // the system message and the finished turns
	turns    int

	generating atomic.Bool // an answer is being generated (Ctrl-C stops it)
	stop       atomic.Bool // Ctrl-C asked the answer to stop
}

// errRefused marks a user message the conversation does not take (it stays as it was).
var errRefused = errors.New("message refused")

func (r *runCmd) chat(f *gguf.File, tok tokenizer.Tokenizer, c *model.Context, sp sample.Params, sm sample.Model, stdin io.Reader, stdout io.Writer, stderr io.Writer) error {
	tmpl, err := chat.FromGGUF(f)
	if err != nil {
		return cannotRun(fmt.Errorf("run: --chat: %w", err))
	}
	s := &chatSession{tmpl: tmpl, tok: tok, c: c, sp: sp, sm: sm, nPredict: r.NPredict, ignoreEOS: r.IgnoreEOS}
	if r.System != "" {
		if !utf8.ValidString(string(r.System)) {
			return errors.New("run: --system: the text is not valid UTF-8")
		}
		s.messages = append(s.messages, chat.Message{Role: "system", Content: string(r.System)})
	}
	interactive := isTerminal(stdin)

	// Ctrl-C: stops the answer being generated; a second one before it
	// stops exits (status 130); while a message is read, ends the loop.
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt)
	quit := make(chan struct{})
	var quitOnce sync.Once
	go func() {
		for range sig {
			if s.generating.Load() {
				if s.stop.Swap(true) {
					fmt.Fprintln(stderr, "\ninterrupted")
					os.Exit(130)
				}
				continue
			}
			quitOnce.Do(func() { close(quit) })
		}
	}()
	defer func() {
		signal.Stop(sig)
		close(sig)
	}()

	var in messageReader
	if interactive {
		fmt.Fprintf(stderr, "chat: %s; /exit or Ctrl-D ends the conversation, Ctrl-C stops an answer\n", chatBanner(tmpl, r.System != ""))
		in = newTermReader(stdin.(*os.File), stderr, quit)
	} else {
		in = newLineReader(stdin, quit)
	}

	refused := 0
	first := r.Prompt
	for {
		var msg string
		if first != nil {
			msg, first = string(*first), nil
			if interactive {
				fmt.Fprintf(stderr, "> %s\n", msg)
			}
		} else {
			var err error
			if msg, err = in.readMessage(); err == io.EOF {
				break
			} else if err != nil {
				return fmt.Errorf("run: --chat: reading a message: %w", err)
			}
		}
		msg = strings.TrimSuffix(msg, "\n")
		if msg == "" {
			continue
		}
		if strings.HasPrefix(msg, "/exit") {
			break
		}
		t, err := s.turn(msg, stdout)
		if errors.Is(err, errRefused) {
			refused++
			fmt.Fprintf(stderr, "bankml: run: %v\n", err)
			continue
		} else if err != nil {
			return fmt.Errorf("run: %w", err)
		}
		fmt.Fprintln(stderr, t.summary())
		if r.onTurn != nil {
			r.onTurn(t)
		}
		if r.SingleTurn {
			break
		}
	}
	if refused > 0 && !interactive {
		return fmt.Errorf("run: --chat: %d message(s) refused (see above)", refused)
	}
	return nil
}

// chatBanner names the template in use.
func chatBanner(t *chat.Template, system bool) string {
	b := "the model's chat template"
	if t.Builtin() {
		b = "ChatML (the model has no chat template)"
	}
	if system {
		b += ", with the system message"
	}
	return b
}

// turn answers one user message: render, tokenize, reuse the cache,
// evaluate, generate (streamed to out), and append both messages to the
// conversation. A message the conversation cannot take gives an error
// wrapping errRefused, and the conversation and the cache's use stay as
// they were.
func (s *chatSession) turn(user string, out io.Writer) (chatTurn, error) {
	if !utf8.ValidString(user) {
		return chatTurn{}, fmt.Errorf("turn %d: %w: the message is not valid UTF-8", s.turns+1, errRefused)
	}
	msgs := append(append([]chat.Message(nil), s.messages...), chat.Message{Role: "user", Content: user})
	res, err := s.render(msgs)
	if err != nil { // a template that raises for this conversation, e.g. on the order of the roles
		return chatTurn{}, fmt.Errorf("turn %d: %w: %w; the conversation is kept as it was", s.turns+1, errRefused, err)
	}
	ids := s.tokenize(res.Segments)
	if err := s.c.CheckPrompt(len(ids)); err != nil {
		return chatTurn{}, fmt.Errorf("turn %d: %w: %w; the conversation is kept as it was (a larger --ctx-size holds more)", s.turns+1, errRefused, err)
	}
	s.turns++
	t := chatTurn{N: s.turns, Prompt: ids, nCtx: s.c.NCtx()}

	s.stop.Store(false)
	s.generating.Store(true)
	defer s.generating.Store(false)

	t.Cached = s.c.Reuse(ids)
	t0 := time.Now()
	logits, err := s.decodePrompt(ids[t.Cached:])
	t.tPrompt = time.Since(t0)
	if err != nil {
		return chatTurn{}, err
	}
	var text []byte
	if logits == nil {
		t.Stop = "interrupt"
	} else if text, err = s.generate(&t, logits, out); err != nil {
		return chatTurn{}, err
	}
	if len(text) > 0 && text[len(text)-1] != '\n' {
		if _, err := io.WriteString(out, "\n"); err != nil {
			return chatTurn{}, err
		}
	}
	t.Answer = strings.ToValidUTF8(string(text), "\uFFFD")
	s.messages = append(msgs, chat.Message{Role: "assistant", Content: t.Answer})
	return t, nil
}

// render renders the conversation as llama-server renders the request
// llama-cli sends ({"messages": [...]}, every other field at its default).
func (s *chatSession) render(msgs []chat.Message) (chat.Result, error) {
	type message struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	}
	body := struct {
		Messages []message `json:"messages"`
	}{}
	for _, m := range msgs {
		body.Messages = append(body.Messages, message{m.Role, m.Content})
	}
	b, err := json.Marshal(body)
	if err != nil {
		return chat.Result{}, err
	}
	in, err := chat.ParseRequest(b)
	if err != nil {
		return chat.Result{}, err
	}
	return s.tmpl.Apply(in)
}

// tokenize tokenizes a rendered prompt: each segment without added special
// tokens, with special-token parsing only in template text; the BOS (and
// EOS) the tokenizer adds, once, around the whole (llama_tokenize's
// add_special on the whole prompt; the template's leading BOS text is
// already removed by Apply, so it is never there twice).
func (s *chatSession) tokenize(segs []chat.Segment) []int32 {
	var ids []int32
	if s.tok.AddBOS() {
		ids = append(ids, s.tok.BOS())
	}
	for _, seg := range segs {
		ids = append(ids, s.tok.Tokenize(seg.Text, false, seg.Special)...)
	}
	if s.tok.AddEOS() {
		ids = append(ids, s.tok.EOS())
	}
	return ids
}

// decodePrompt evaluates the new part of the prompt one micro-batch
// (model.NUbatch tokens) at a time, so that Ctrl-C is seen between them; the
// boundaries are those of one decode of the whole (and of llama-server's
// n_batch 2048, a multiple of 512), and a micro-batch's K/V do not depend on
// which of its rows output logits, so the cache and the last logits are
// those of one decode. It returns nil logits when interrupted.
func (s *chatSession) decodePrompt(ids []int32) ([]float32, error) {
	var logits []float32
	for len(ids) > 0 {
		if s.stop.Load() {
			return nil, nil
		}
		n := min(len(ids), model.NUbatch)
		var err error
		if logits, err = s.c.Decode(ids[:n]); err != nil {
			return nil, err
		}
		ids = ids[n:]
	}
	return logits, nil
}

// generate samples the answer from logits, streaming its text to out, and
// returns the text.
func (s *chatSession) generate(t *chatTurn, logits []float32, out io.Writer) ([]byte, error) {
	smp, err := sample.New(s.sp, s.sm)
	if err != nil {
		return nil, err
	}
	for _, id := range t.Prompt { // llama-server's init_sampler: the prompt is history
		smp.Accept(id)
	}
	if drawsAtRandom(s.sp) {
		t.seed = fmt.Sprint(smp.Seed())
	}
	limit := s.c.NCtx() - len(t.Prompt) // llama-server stops when the cache would fill the context
	t.Stop = "context"
	if s.nPredict >= 0 && s.nPredict <= limit {
		limit, t.Stop = s.nPredict, "n-predict"
	}
	dec := tokenizer.NewDecoder(s.tok, false)
	var text []byte
	emit := func(b []byte) error {
		text = append(text, b...)
		_, err := out.Write(b)
		return err
	}
	chain := chainSamples(s.sp, s.sm.SuppressTokens)
	for len(t.Tokens) < limit {
		next := sample.Greedy(logits)
		if chain {
			if next, err = smp.Sample(logits); err != nil {
				return nil, err
			}
			smp.Accept(next)
		}
		t.Tokens = append(t.Tokens, next)
		if !s.ignoreEOS && s.tok.IsEOG(next) {
			t.Stop = "eog"
			break
		}
		if err := emit(dec.Write(next)); err != nil {
			return nil, err
		}
		if len(t.Tokens) == limit {
			break
		}
		if s.stop.Load() {
			t.Stop = "interrupt"
			break
		}
		t1 := time.Now()
		if logits, err = s.c.Decode([]int32{next}); err != nil {
			return nil, err
		}
		t.tGen += time.Since(t1)
		t.decodes++
	}
	return text, emit(dec.Close())
}

// summary is the turn's line on standard error.
func (t chatTurn) summary() string {
	answer := len(t.Tokens)
	if t.Stop == "eog" {
		answer--
	}
	rate := func(n int, d time.Duration) string {
		if n == 0 || d <= 0 {
			return "n/a"
		}
		return fmt.Sprintf("%.1f tok/s", float64(n)/d.Seconds())
	}
	why := map[string]string{
		"eog":       "end of generation",
		"n-predict": "-n reached",
		"context":   fmt.Sprintf("the context is full (the prompt's %d and the answer's %d tokens fill its %d; a further message will not fit)", len(t.Prompt), len(t.Tokens), t.nCtx),
		"interrupt": "interrupted",
	}[t.Stop]
	seed := ""
	if t.seed != "" {
		seed = ", seed " + t.seed
	}
	return fmt.Sprintf("turn %d: prompt %d tokens, %d from the cache, %d evaluated (%s); answer %d tokens (decode %s%s), stopped: %s",
		t.N, len(t.Prompt), t.Cached, len(t.Prompt)-t.Cached, rate(len(t.Prompt)-t.Cached, t.tPrompt), answer, rate(t.decodes, t.tGen), seed, why)
}

// messageReader reads user messages: io.EOF at the end of the input.
type messageReader interface {
	readMessage() (string, error)
}

// lineReader reads messages from input that is not a terminal: one line a
// message, a line ending in "\" continued on the next (joined with "\n").
// Lines are read by a goroutine so that Ctrl-C (quit) ends a wait.
type lineReader struct {
	lines <-chan lineOrErr
	quit  <-chan struct{}
}

type lineOrErr struct {
	line string
	err  error
}

func newLineReader(r io.Reader, quit <-chan struct{}) *lineReader {
	ch := make(chan lineOrErr)
	go func() {
		br := bufio.NewReader(r)
		for {
			line, err := br.ReadString('\n')
			if line != "" {
				ch <- lineOrErr{line: strings.TrimSuffix(line, "\n")}
			}
			if err != nil {
				ch <- lineOrErr{err: err}
				close(ch)
				return
			}
		}
	}()
	return &lineReader{lines: ch, quit: quit}
}

func (l *lineReader) readMessage() (string, error) {
	var msg strings.Builder
	for {
		var le lineOrErr
		var ok bool
		select {
		case le, ok = <-l.lines:
		case <-l.quit:
			return "", io.EOF
		}
		if !ok {
			return "", io.EOF
		}
		if le.err != nil {
			if le.err == io.EOF && msg.Len() > 0 {
				return msg.String(), nil
			}
			return "", le.err
		}
		if more, ok := strings.CutSuffix(le.line, `\`); ok {
			msg.WriteString(more + "\n")
			continue
		}
		msg.WriteString(le.line)
		return msg.String(), nil
	}
}

// termReader reads messages on a terminal with golang.org/x/term's line
// editor: the terminal is in raw mode only while a line is read (so that
// Ctrl-C raises SIGINT during generation); Ctrl-D on an empty line and
// Ctrl-C end the input (x/term returns io.EOF for both).
type termReader struct {
	f    *os.File
	t    *term.Terminal
	quit <-chan struct{}
}

func newTermReader(f *os.File, echo io.Writer, quit <-chan struct{}) *termReader {
	t := term.NewTerminal(struct {
		io.Reader
		io.Writer
	}{f, echo}, "> ")
	if w, h, err := term.GetSize(int(f.Fd())); err == nil && w > 0 && h > 0 {
		_ = t.SetSize(w, h) // a size x/term refuses keeps its default (80 columns)
	}
	return &termReader{f: f, t: t, quit: quit}
}

func (r *termReader) readMessage() (string, error) {
	var msg strings.Builder
	r.t.SetPrompt("> ")
	for {
		select {
		case <-r.quit:
			return "", io.EOF
		default:
		}
		old, err := term.MakeRaw(int(r.f.Fd()))
		if err != nil {
			return "", err
		}
		line, err := r.t.ReadLine()
		if rerr := term.Restore(int(r.f.Fd()), old); rerr != nil && err == nil {
			err = rerr
		}
		if err == io.EOF && msg.Len() > 0 {
			return msg.String(), nil
		}
		if err != nil {
			return "", err
		}
		if more, ok := strings.CutSuffix(line, `\`); ok {
			msg.WriteString(more + "\n")
			r.t.SetPrompt("")
			continue
		}
		msg.WriteString(line)
		return msg.String(), nil
	}
}

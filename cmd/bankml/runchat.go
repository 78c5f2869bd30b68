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
//   - the rendered prompt is tokenized and generated from exactly as bankml
//     serve's /v1/chat/completions does it, through the same engine
//     (engine.Tokenize of the template's segments, engine.Generate on the one
//     slot with cache_prompt): refused when it does not leave room for one
//     token (the error names both sizes; the conversation stays as it was),
//     the cached prefix kept by the engine's rule (see package engine: what a
//     fresh evaluation computes alike), the rest evaluated;
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
// skipped, a message starting with "/exit" (llama-cli's prefix test) or "/bye"
// (Ollama's) ends the conversation, any other message starting with "/" is one
// of Ollama's `ollama run` commands (chatSession.command: /clear, /set, /show,
// /?, /help; /load and /save not supported; anything else an unknown command),
// answered on standard error and never sent, and the end of input ends it: Ctrl-D on an empty line on a
// terminal, the end of piped input otherwise. That last rule is
// llama-completion's conversation mode ("EOF by user"); llama-cli v0.5.0
// itself skips the empty read and prompts again, forever (cli_context::run
// never tests for the end of input; Ctrl-D on a terminal likewise only gives
// a new prompt there), which a program reading a script cannot follow. Ctrl-C while an answer is generated stops that answer (the text so
// far joins the conversation, as llama-cli keeps it), a second Ctrl-C before
// it stops exits with status 130, and Ctrl-C while a message is read ends the
// conversation (status 0), as in llama-cli; see chatInterrupts for the moments
// in between. -p is the first user message (llama-cli's -p
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
// Deliberate differences: the cached prefix a turn reuses is the engine's
// (bankml serve's), not all of llama-server's, so that every answer equals the
// one a fresh evaluation of the conversation gives; llama-server parses the answer with the template's
// output parser (reasoning into reasoning_content, tool calls); bankml prints
// and keeps the answer's text as the model wrote it (Qwen3's template itself
// drops an earlier answer's think block when it renders the conversation
// again), and does not implement llama-cli's other commands (/regen, /read,
// /glob, media: unknown commands, as in Ollama). A message or answer that is not valid UTF-8 cannot
// be sent as JSON: a message is refused, an answer's invalid bytes become
// U+FFFD in the conversation (not on standard output). A line ending in "/"
// keeps its "/" (llama.cpp's console drops it in both modes, its marker for
// "return control", which with one line per message changes nothing else but
// the text). When standard input is not a terminal, a refused message makes
// the exit status 1 once the conversation ends.

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/ollama/ollama/api"
	"golang.org/x/term"

	"github.com/bankml/bankml/chat"
	"github.com/bankml/bankml/engine"
	"github.com/bankml/bankml/sample"
	"github.com/bankml/bankml/serve"
	"github.com/bankml/bankml/tokenizer"
)

// chatTurn is what one turn did.
type chatTurn struct {
	N      int     // the turn's number, from 1
	Prompt []int32 // the tokens of the rendered conversation
	Cached int     // how many of them were kept in the cache (llama-server's timings.cache_n)
	Tokens []int32 // the sampled tokens, a final end-of-generation token included
	Answer string  // the answer's text as it joins the conversation
	Stop   string  // why the answer stopped: "eog", "reverse-prompt", "n-predict", "context" or "interrupt"
	word   string  // the stop string it stopped at
	wordBy string  // what gave it: "-r", "NAME:TAG's stop", "stop (/set parameter)"

	nCtx    int    // the context size
	budget  string // what set the answer's budget: "-n", or a stored model's num_predict
	seed    string // the draw's seed when the chain draws at random (drawsAtRandom), else ""
	timings engine.Timings
}

// chatSession is one conversation on the engine's one slot.
type chatSession struct {
	tmpl      *chat.Template
	tok       tokenizer.Tokenizer
	e         *engine.Engine
	sp        sample.Params
	nPredict  int
	stops     []string // -r/--reverse-prompt, or the model's stop: the engine's stop strings
	stopsBy   string   // what gave stops: "-r", "NAME:TAG\'s stop", "stop (/set parameter)"
	ignoreEOS bool
	// nCtx is the context a turn's prompt and answer may fill: the engine's, or a stored model's num_ctx
	// (numCtx, ref its NAME:TAG), which bounds each answer as serve's Ollama API bounds it.
	nCtx   int
	numCtx bool
	ref    string
	budget string // what set nPredict: "-n", or the model's num_predict

	// The conversation as Ollama's client holds it (cmd/interactive.go's opts.Messages): the system message
	// (--system, or /set system's), then the finished turns; a stored model's SYSTEM and MESSAGEs go
	// around it at each turn (conversation), as Ollama's server puts them.
	client []chat.Message
	system string // the system message /clear keeps: --system, or the last /set system (Ollama's opts.System)
	model  serve.ModelDefaults
	turns  int

	// /set and /show (chatCommand).
	base   chatBase       // the run's settings, beneath /set parameter's
	opts   map[string]any // /set parameter's options, by Ollama's name, typed as api.FormatParams types them
	ctxBy  string         // what set nCtx when numCtx: "NAME:TAG's num_ctx", or "/set parameter num_ctx"
	quiet  bool           // /set quiet: no summary line per turn
	about  modelAbout
	hist   *chatHistory // the line editor's history (/set history, /set nohistory); nil for piped input
	failed int          // commands refused (a bad /set value, an unknown or unsupported command)

	ints chatInterrupts
}

// chatInterrupts is what Ctrl-C (SIGINT) does at each point of the loop, as
// llama-cli's signal handler and read loop do it (tools/cli/cli.cpp,
// tools/cli/cli-context.cpp, common/console.cpp):
//   - while an answer is generated (from the turn's start, its prompt's
//     evaluation included), the first Ctrl-C stops that answer and a second
//     one before it stops exits with status 130; every answer starts afresh;
//   - while a line is read (the terminal in raw mode), Ctrl-C is a key the
//     line editor reads: it ends the conversation, status 0 (llama-cli's read
//     ends on the signal and its loop breaks); a signal that arrives then
//     (raised before raw mode was set but seen late, or sent with kill) does
//     the same at once: the terminal is restored and the process exits 0;
//   - between the two (the terminal cooked, no answer yet: the summary, the
//     next read's setup), Ctrl-C is kept: the next read ends the
//     conversation before reading anything, and a turn about to start
//     (its message read before the Ctrl-C) starts stopped.
//
// Deliberate difference: llama-cli keeps a Ctrl-C seen between reads until
// its next read returns, so the line typed next is read and then dropped;
// bankml ends at once and never drops a line it has read.
type chatInterrupts struct {
	mu       sync.Mutex
	cancel   context.CancelFunc // stops the answer being generated; nil between answers
	stopping bool               // the answer being generated was stopped once already
	pending  bool               // a Ctrl-C came between answers and reads
	restore  func()             // while a terminal line is read: restores the terminal's mode
	quit     chan struct{}      // receives a value when pending is set (ends a wait for piped input)
}

// signal acts on one SIGINT; stderr gets a newline before an exit.
func (c *chatInterrupts) signal(stderr io.Writer) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.cancel != nil && c.stopping:
		fmt.Fprintln(stderr, "\ninterrupted")
		os.Exit(130)
	case c.cancel != nil:
		c.stopping = true
		c.cancel()
	case c.restore != nil:
		c.restore()
		fmt.Fprintln(stderr)
		os.Exit(0)
	default:
		c.pending = true
		select {
		case c.quitChan() <- struct{}{}:
		default:
		}
	}
}

func (c *chatInterrupts) quitChan() chan struct{} {
	if c.quit == nil {
		c.quit = make(chan struct{}, 1)
	}
	return c.quit
}

// wait is the channel a reader of piped input waits on besides its input.
func (c *chatInterrupts) wait() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.quitChan()
}

// takePending reports (and clears) a Ctrl-C kept between answers and reads.
// c.mu must be held.
func (c *chatInterrupts) takePending() bool {
	p := c.pending
	c.pending = false
	select {
	case <-c.quitChan():
	default:
	}
	return p
}

// startReading marks a terminal read in raw mode (restore undoes raw mode), unless a Ctrl-C is
// pending: then it reports false and the read must end the conversation.
func (c *chatInterrupts) startReading(restore func()) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.takePending() {
		return false
	}
	c.restore = restore
	return true
}

func (c *chatInterrupts) endReading() {
	c.mu.Lock()
	c.restore = nil
	c.mu.Unlock()
}

// startAnswer marks an answer being generated (cancel stops it); a pending Ctrl-C stops it at once.
func (c *chatInterrupts) startAnswer(cancel context.CancelFunc) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cancel, c.stopping = cancel, false
	if c.takePending() {
		c.stopping = true
		cancel()
	}
}

func (c *chatInterrupts) endAnswer() {
	c.mu.Lock()
	c.cancel, c.stopping = nil, false
	c.mu.Unlock()
}

// errRefused marks a user message the conversation does not take (it stays as it was).
var errRefused = errors.New("message refused")

func (r *runCmd) chat(e *engine.Engine, tmpl *chat.Template, sp sample.Params, set runSettings, stdin io.Reader, stdout, stderr, info io.Writer) error {
	s := &chatSession{tmpl: tmpl, tok: e.Tokenizer(), e: e, sp: sp, nPredict: set.nPredict, stops: set.stops, stopsBy: set.stopsBy, ignoreEOS: r.IgnoreEOS,
		nCtx: set.nCtx, numCtx: set.numCtx, ref: set.ref, budget: "-n", model: set.model, about: set.about}
	if set.modelNPredict {
		s.budget = set.ref + "'s num_predict"
	}
	if set.numCtx {
		s.ctxBy = set.ref + "'s num_ctx"
	}
	s.base = chatBase{sp: s.sp, nPredict: s.nPredict, budget: s.budget, stops: s.stops, stopsBy: s.stopsBy, nCtx: s.nCtx, numCtx: s.numCtx,
		ctxBy: s.ctxBy, engineCtx: set.engineCtx}
	if !utf8.ValidString(string(r.System)) {
		return errors.New("run: --system: the text is not valid UTF-8")
	}
	// The --system message, under a stored model's SYSTEM and MESSAGEs, as serve's Ollama API starts a chat.
	s.system = string(r.System)
	s.client = s.cleared()
	interactive := isTerminal(stdin)

	// Ctrl-C (SIGINT): see chatInterrupts.
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt)
	go func() {
		for range sig {
			s.ints.signal(stderr)
		}
	}()
	defer func() {
		signal.Stop(sig)
		close(sig)
	}()

	var in messageReader
	if interactive {
		start := s.conversation(s.client)
		fmt.Fprintf(stderr, "chat: %s; /bye or Ctrl-D ends the conversation, /? lists the commands, Ctrl-C stops an answer\n", chatBanner(tmpl, len(start) > 0 && start[0].Role == "system"))
		tr := newTermReader(stdin.(*os.File), stderr, &s.ints)
		s.hist = tr.hist
		in = tr
	} else {
		in = newLineReader(stdin, &s.ints)
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
		if chatEnds(msg) {
			break
		}
		if strings.HasPrefix(msg, "/") { // every other line starting with "/" is a command, as in Ollama
			s.command(msg, stderr)
			continue
		}
		t, err := s.turn(msg, stdout, info, r.VerbosePrompt)
		if errors.Is(err, errRefused) {
			refused++
			fmt.Fprintf(stderr, "bankml: run: %v\n", err)
			continue
		} else if err != nil {
			return fmt.Errorf("run: %w", err)
		}
		if !s.quiet {
			fmt.Fprintln(info, t.summary())
		}
		if r.onTurn != nil {
			r.onTurn(t)
		}
		if r.SingleTurn {
			break
		}
	}
	if !interactive {
		switch {
		case refused > 0 && s.failed > 0:
			return fmt.Errorf("run: --chat: %d message(s) and %d command(s) refused (see above)", refused, s.failed)
		case refused > 0:
			return fmt.Errorf("run: --chat: %d message(s) refused (see above)", refused)
		case s.failed > 0:
			return fmt.Errorf("run: --chat: %d command(s) refused (see above)", s.failed)
		}
	}
	return nil
}

// chatEnds reports whether msg ends the conversation: a message starting with /exit (llama-cli's prefix test)
// or /bye (Ollama's), never sent to the model.
func chatEnds(msg string) bool {
	return strings.HasPrefix(msg, "/exit") || strings.HasPrefix(msg, "/bye")
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

// turn answers one user message as bankml serve's /v1/chat/completions answers the conversation: render
// (chat.ParseRequest and Template.Apply), tokenize (engine.Tokenize of the segments), generate
// (engine.Generate with cache_prompt, the answer streamed to out), and append both messages to the
// conversation. A message the conversation cannot take gives an error wrapping errRefused, and the
// conversation and the cache's use stay as they were. verbose lists the prompt's tokens on info.
func (s *chatSession) turn(user string, out, info io.Writer, verbose bool) (chatTurn, error) {
	if !utf8.ValidString(user) {
		return chatTurn{}, fmt.Errorf("turn %d: %w: the message is not valid UTF-8", s.turns+1, errRefused)
	}
	client := append(slices.Clone(s.client), chat.Message{Role: "user", Content: user})
	msgs := s.conversation(client)
	res, err := s.render(msgs)
	if err != nil { // a template that raises for this conversation, e.g. on the order of the roles
		return chatTurn{}, fmt.Errorf("turn %d: %w: %w; the conversation is kept as it was", s.turns+1, errRefused, err)
	}
	ids, err := s.e.Tokenize(engine.Prompt{Segments: res.Segments})
	if err != nil {
		return chatTurn{}, fmt.Errorf("turn %d: %w: %w; the conversation is kept as it was", s.turns+1, errRefused, err)
	}
	if verbose {
		verbosePrompt(info, s.tok, res.Prompt, ids)
	}
	if len(ids) >= s.nCtx { // llama-server refuses a prompt of n_ctx tokens or more, serve one of num_ctx or more
		ctx := fmt.Sprint(s.nCtx)
		var more string
		larger := "a larger --ctx-size holds more"
		if s.numCtx {
			ctx += ", " + s.ctxBy
			larger = "-c/--ctx-size N overrides num_ctx"
			if s.opts["num_ctx"] != nil {
				larger = "/set parameter num_ctx N sets a larger one"
			}
		}
		more = " (" + larger + ")"
		if slices.ContainsFunc(s.client, func(m chat.Message) bool { return m.Role != "system" }) {
			// the turns so far fill it: /clear lets the conversation go on
			more = ": /clear forgets it (the system message kept), or " + larger
		}
		return chatTurn{}, fmt.Errorf("turn %d: %w: the prompt is %d tokens and the context %s: it must be shorter than the context; the conversation is kept as it was%s",
			s.turns+1, errRefused, len(ids), ctx, more)
	}
	s.turns++
	t := chatTurn{N: s.turns, Prompt: ids, nCtx: s.nCtx, budget: s.budget}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s.ints.startAnswer(cancel)
	defer s.ints.endAnswer()

	nPredict := s.nPredict
	if nPredict < 0 {
		nPredict = -1
	}
	bounded := false // the answer's budget is what num_ctx leaves, as serve's Ollama API bounds it
	if left := s.nCtx - len(ids); s.numCtx && (nPredict < 0 || nPredict > left) {
		nPredict, bounded = left, true
	}
	dec := tokenizer.NewDecoder(s.tok, false)
	var text []byte
	emit := func(b []byte) error {
		text = append(text, b...)
		_, err := out.Write(b)
		return err
	}
	r, err := s.e.Generate(ctx, engine.Request{
		Prompt: engine.Prompt{Tokens: ids}, Sampling: s.sp, NPredict: nPredict, Stop: s.stops, IgnoreEOS: s.ignoreEOS, CachePrompt: true, Slot: -1,
	}, func(tk engine.Token) error {
		if len(s.stops) > 0 { // the engine's text, as serve streams it: cut at a stop string, a prefix of one held back
			return emit([]byte(tk.Text))
		}
		if !s.ignoreEOS && s.tok.IsEOG(tk.ID) {
			return nil
		}
		return emit(dec.Write(tk.ID))
	})
	interrupted := errors.Is(err, context.Canceled)
	if err != nil && !interrupted {
		return chatTurn{}, err
	}
	rest := dec.Close()
	if len(s.stops) > 0 {
		rest = []byte(r.Unsent) // what was held back when no stop string came, as serve's last chunk carries it
	}
	if err := emit(rest); err != nil {
		return chatTurn{}, err
	}
	t.Cached, t.Tokens, t.timings = r.CachedTokens, r.Tokens, r.Timings
	if drawsAtRandom(s.sp) && len(r.Tokens) > 0 {
		t.seed = fmt.Sprint(r.Seed)
	}
	switch {
	case interrupted:
		t.Stop = "interrupt"
	case r.StopType == "eos":
		t.Stop = "eog"
	case r.StopType == "word":
		t.Stop, t.word, t.wordBy = "reverse-prompt", r.StoppingWord, s.stopsBy
	case r.Truncated && !(s.nPredict >= 0 && len(r.Tokens) >= s.nPredict), bounded && len(r.Tokens) >= nPredict:
		t.Stop = "context"
	default:
		t.Stop = "n-predict"
	}
	if len(text) > 0 && text[len(text)-1] != '\n' {
		if _, err := io.WriteString(out, "\n"); err != nil {
			return chatTurn{}, err
		}
	}
	t.Answer = strings.ToValidUTF8(string(text), "\uFFFD")
	s.client = append(client, chat.Message{Role: "assistant", Content: t.Answer})
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

// summary is the turn's line on standard error.
func (t chatTurn) summary() string {
	answer := len(t.Tokens)
	if t.Stop == "eog" {
		answer--
	}
	why := map[string]string{
		"eog":            "end of generation",
		"reverse-prompt": fmt.Sprintf("the reverse prompt %q (-r)", t.word),
		"n-predict":      t.budget + " reached",
		"context":        fmt.Sprintf("the context is full (the prompt's %d and the answer's %d tokens fill its %d): /clear forgets the conversation so far to go on", len(t.Prompt), len(t.Tokens), t.nCtx),
		"interrupt":      "interrupted",
	}[t.Stop]
	if t.Stop == "reverse-prompt" && t.wordBy != "-r" {
		why = fmt.Sprintf("the stop string %q (%s)", t.word, t.wordBy)
	}
	seed := ""
	if t.seed != "" {
		seed = ", seed " + t.seed
	}
	return fmt.Sprintf("turn %d: prompt %d tokens, %d from the cache, %d evaluated (%s); answer %d tokens (decode %s%s), stopped: %s",
		t.N, len(t.Prompt), t.Cached, len(t.Prompt)-t.Cached, perSecond(t.timings.PromptPerSecond()), answer, perSecond(t.timings.PredictedPerSecond()), seed, why)
}

// messageReader reads user messages: io.EOF at the end of the input.
type messageReader interface {
	readMessage() (string, error)
}

// lineReader reads messages from input that is not a terminal: one line a
// message, a line ending in "\" continued on the next (joined with "\n").
// Lines are read by a goroutine so that a Ctrl-C between answers (see
// chatInterrupts) ends a wait, and ends the input before a line read already.
type lineReader struct {
	lines <-chan lineOrErr
	ints  *chatInterrupts
}

type lineOrErr struct {
	line string
	err  error
}

func newLineReader(r io.Reader, ints *chatInterrupts) *lineReader {
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
	return &lineReader{lines: ch, ints: ints}
}

func (l *lineReader) readMessage() (string, error) {
	var msg strings.Builder
	for {
		var le lineOrErr
		var ok bool
		quit := l.ints.wait()
		select {
		case <-quit:
			return "", io.EOF
		default:
		}
		select {
		case le, ok = <-l.lines:
		case <-quit:
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
// Ctrl-C end the input (x/term returns io.EOF for both), and so does a
// Ctrl-C kept from before the read (see chatInterrupts).
type termReader struct {
	f    *os.File
	t    *term.Terminal
	ints *chatInterrupts
	hist *chatHistory
}

func newTermReader(f *os.File, echo io.Writer, ints *chatInterrupts) *termReader {
	t := term.NewTerminal(struct {
		io.Reader
		io.Writer
	}{f, echo}, "> ")
	if w, h, err := term.GetSize(int(f.Fd())); err == nil && w > 0 && h > 0 {
		_ = t.SetSize(w, h) // a size x/term refuses keeps its default (80 columns)
	}
	hist := &chatHistory{on: true}
	t.History = hist
	return &termReader{f: f, t: t, ints: ints, hist: hist}
}

func (r *termReader) readMessage() (string, error) {
	var msg strings.Builder
	r.t.SetPrompt("> ")
	for {
		line, err := r.readLine()
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

// readLine reads one line in raw mode: io.EOF for Ctrl-D on an empty line, Ctrl-C, or a Ctrl-C
// kept from before raw mode was set.
func (r *termReader) readLine() (string, error) {
	fd := int(r.f.Fd())
	old, err := term.MakeRaw(fd)
	if err != nil {
		return "", err
	}
	if !r.ints.startReading(func() { _ = term.Restore(fd, old) }) {
		if err := term.Restore(fd, old); err != nil {
			return "", err
		}
		return "", io.EOF
	}
	line, err := r.t.ReadLine()
	r.ints.endReading()
	if rerr := term.Restore(fd, old); rerr != nil && err == nil {
		err = rerr
	}
	return line, err
}

// conversation is the conversation a turn renders from the client's messages, as serve's Ollama API (and
// Ollama's server) makes a chat's: a stored model's MESSAGEs first, its SYSTEM before them when the client's
// messages do not start with a system message of their own (serve.ModelDefaults.Conversation).
func (s *chatSession) conversation(client []chat.Message) []chat.Message {
	msgs := make([]api.Message, len(client))
	for i, m := range client {
		msgs[i] = api.Message{Role: m.Role, Content: m.Content}
	}
	var out []chat.Message
	for _, m := range s.model.Conversation(msgs) {
		out = append(out, chat.Message{Role: m.Role, Content: m.Content})
	}
	return out
}

// cleared is the client's messages after /clear, as Ollama's: the system message alone (--system, or the last
// /set system), none without one.
func (s *chatSession) cleared() []chat.Message {
	if s.system == "" {
		return nil
	}
	return []chat.Message{{Role: "system", Content: s.system}}
}

// clearedLine says what /clear kept.
func (s *chatSession) clearedLine() string {
	start := s.conversation(s.client)
	kept := "the system message is kept"
	switch {
	case len(start) == 0:
		kept = "the next message starts a new one"
	case start[0].Role != "system":
		kept = "the model's MESSAGEs are kept"
	case len(start) > 1:
		kept = "the system message and the model's MESSAGEs are kept"
	}
	return "cleared the conversation; " + kept
}

package main

// The commands of run --chat (Ollama's ollama run commands: /set, /show, /?, ...), as cmd/interactive.go
// answers them; runchat.go reads the messages and runs the turns.

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/ollama/ollama/api"

	"github.com/bankml/bankml/chat"
	"github.com/bankml/bankml/sample"
	"github.com/bankml/bankml/serve"
)

// modelAbout is what /show info and /show license print of the model (run.go fills it).
type modelAbout struct {
	arch       string   // general.architecture
	params     string   // the parameter count as Ollama prints it (format.HumanNumber of the tensors' elements)
	ctxLength  int      // the training context ({arch}.context_length)
	embdLength int      // {arch}.embedding_length
	quant      string   // general.file_type's name as Ollama's details.quantization_level gives it (serve.QuantizationLevel)
	license    []string // a stored model's LICENSEs
}

// chatBase is the run's own settings (its flags over a stored model's Modelfile), beneath the options /set
// parameter gives, as Ollama's interactive options go over the model's PARAMETERs.
type chatBase struct {
	sp        sample.Params
	nPredict  int
	budget    string
	stops     []string
	stopsBy   string
	nCtx      int
	numCtx    bool
	ctxBy     string
	engineCtx int
}

// chatHistory is the line editor's history (x/term's default ring, 100 lines), which /set nohistory stops
// adding to and /set history resumes, as Ollama's readline history.
type chatHistory struct {
	on    bool
	lines []string // the oldest first
}

func (h *chatHistory) Add(line string) {
	if !h.on {
		return
	}
	h.lines = append(h.lines, line)
	if len(h.lines) > 100 {
		h.lines = h.lines[1:]
	}
}

func (h *chatHistory) Len() int { return len(h.lines) }

func (h *chatHistory) At(i int) string { return h.lines[len(h.lines)-1-i] }

// command answers a message starting with "/" other than /bye and /exit, as Ollama's `ollama run` does
// (cmd/interactive.go: each command a prefix test, in its order): /list, /load and /save are not supported by
// bankml; /clear; /set; /show; /? and /help; any other is an unknown command. Nothing is sent to the model;
// the answers go to w (standard error: standard output carries the answers only). A refused command (a bad
// value, an unknown or unsupported one) counts in s.failed.
func (s *chatSession) command(msg string, w io.Writer) {
	args := strings.Fields(msg)
	switch {
	case strings.HasPrefix(msg, "/list"), strings.HasPrefix(msg, "/load"), strings.HasPrefix(msg, "/save"):
		why := map[string]string{
			"/list": "a run holds one model; bankml list lists the store's models",
			"/load": "a run holds one model; start bankml run with another",
			"/save": "it does not create a model from a session; bankml create NAME -f Modelfile makes one",
		}[msg[:5]]
		s.refuse(w, "%s is not supported by bankml: %s", msg[:5], why)
	case strings.HasPrefix(msg, "/clear"):
		s.client = s.cleared()
		fmt.Fprintf(w, "chat: %s\n", s.clearedLine())
	case strings.HasPrefix(msg, "/set"):
		s.set(msg, args, w)
	case strings.HasPrefix(msg, "/show"):
		s.show(args, w)
	case strings.HasPrefix(msg, "/help"), strings.HasPrefix(msg, "/?"):
		topic := ""
		if len(args) > 1 {
			topic = args[1]
		}
		switch topic {
		case "set", "/set":
			fmt.Fprint(w, chatHelpSet)
		case "show", "/show":
			fmt.Fprint(w, chatHelpShow)
		case "shortcut", "shortcuts":
			fmt.Fprint(w, chatHelpShortcuts)
		case "parameter", "parameters":
			fmt.Fprint(w, chatHelpParameters)
		default:
			fmt.Fprint(w, chatHelp)
		}
	default:
		s.refuse(w, "Unknown command '%s'. Type /? for help", args[0])
	}
}

// refuse writes a refused command's line and counts it.
func (s *chatSession) refuse(w io.Writer, format string, a ...any) {
	s.failed++
	fmt.Fprintf(w, format+"\n", a...)
}

// set answers /set as Ollama's: parameter, system, history, nohistory, verbose, quiet, nowordwrap and noformat
// (bankml neither wraps nor formats); wordwrap, format, think and nothink are not supported by bankml.
func (s *chatSession) set(msg string, args []string, w io.Writer) {
	if len(args) < 2 {
		fmt.Fprint(w, chatHelpSet)
		return
	}
	switch args[1] {
	case "parameter":
		if len(args) < 4 {
			fmt.Fprint(w, chatHelpParameters)
			return
		}
		s.setParameter(args[2], args[3:], w)
	case "system":
		s.setSystem(msg, args, w)
	case "history", "nohistory":
		if s.hist == nil {
			s.refuse(w, "/set %s: standard input is not a terminal: there is no line editor and no history", args[1])
			return
		}
		s.hist.on = args[1] == "history"
		fmt.Fprintf(w, "Set '%s' mode.\n", args[1])
	case "verbose", "quiet":
		s.quiet = args[1] == "quiet"
		fmt.Fprintf(w, "Set '%s' mode.\n", args[1])
	case "nowordwrap":
		fmt.Fprintln(w, "Set 'nowordwrap' mode.")
	case "noformat":
		fmt.Fprintln(w, "Disabled format.")
	case "wordwrap":
		s.refuse(w, "/set wordwrap is not supported by bankml: answers are printed as generated, without word wrap")
	case "format":
		s.refuse(w, "/set format is not supported by bankml: give run -j/--json-schema or --grammar instead")
	case "think", "nothink":
		s.refuse(w, "/set %s is not supported by bankml: the chat template renders with thinking at llama-server's default", args[1])
	default:
		s.refuse(w, "Unknown command '/set %s'. Type /? for help", args[1])
	}
}

// setParameter is /set parameter NAME VALUE...: the value read by Ollama's api.FormatParams (every value for
// stop, the first for the others), then every option given so far applied over the run's own settings as serve's
// Ollama API applies a request's options (serve.ModelDefaults.RunSettings: the same names, checks and limits);
// they hold for the following turns. An unknown name, a bad value or an option bankml does not apply is refused
// in Ollama's words ("Couldn't set parameter: ...") and changes nothing.
func (s *chatSession) setParameter(name string, vals []string, w io.Writer) {
	fp, err := api.FormatParams(map[string][]string{name: vals})
	if err != nil {
		s.refuse(w, "Couldn't set parameter: %q", err.Error())
		return
	}
	opts := maps.Clone(s.opts)
	if opts == nil {
		opts = map[string]any{}
	}
	opts[name] = fp[name]
	rs, err := serve.ModelDefaults{Options: opts}.RunSettings(s.base.sp)
	if err != nil {
		s.refuse(w, "Couldn't set parameter: %q", err.Error())
		return
	}
	for _, ig := range rs.Ignored {
		if strings.HasPrefix(ig, name+" (") {
			s.refuse(w, "Couldn't set parameter: %q", "bankml does not apply "+ig)
			return
		}
	}
	s.opts = opts
	s.apply(rs)
	fmt.Fprintf(w, "Set parameter '%s' to '%s'\n", name, strings.Join(vals, ", "))
	if name == "num_ctx" && rs.NumCtx > s.base.engineCtx {
		fmt.Fprintf(w, "chat: num_ctx %d is cut to the run's context, %d (-c/--ctx-size sets it when bankml run starts)\n", rs.NumCtx, s.base.engineCtx)
	}
}

// apply sets the session's settings to the run's own with the /set parameter options rs read over them.
func (s *chatSession) apply(rs serve.RunSettings) {
	b := s.base
	s.sp, s.nPredict, s.budget, s.stops, s.stopsBy = rs.Sampling, b.nPredict, b.budget, b.stops, b.stopsBy
	s.nCtx, s.numCtx, s.ctxBy = b.nCtx, b.numCtx, b.ctxBy
	if rs.Given["num_predict"] {
		s.nPredict, s.budget = rs.NPredict, "num_predict (/set parameter)"
	}
	if rs.Given["stop"] {
		s.stops, s.stopsBy = rs.Stop, "stop (/set parameter)"
	}
	if rs.Given["num_ctx"] {
		s.nCtx, s.numCtx, s.ctxBy = min(rs.NumCtx, b.engineCtx), true, "num_ctx (/set parameter)"
	}
	if rs.RepeatLastNCtx {
		s.sp.PenaltyLastN = int32(s.nCtx)
	}
}

// setSystem is /set system TEXT, as Ollama's: TEXT is the words after "system" joined by one space (a message
// continued with "\" keeps its further lines as they are, as Ollama's """ keeps a multi-line one; a leading
// """ and a trailing one are dropped); it replaces the conversation's last message when that is a system
// message, else it is added after the turns so far, and /clear keeps it.
func (s *chatSession) setSystem(msg string, args []string, w io.Writer) {
	first, rest, more := strings.Cut(msg, "\n")
	words := strings.Fields(first)
	if len(words) < 3 && !more {
		fmt.Fprint(w, chatHelpSet)
		return
	}
	text := strings.Join(words[min(2, len(words)):], " ")
	if more {
		text += "\n" + rest
	}
	if t, ok := strings.CutPrefix(text, `"""`); ok {
		text = strings.TrimSuffix(t, `"""`)
	}
	if !utf8.ValidString(text) {
		s.refuse(w, "/set system: the text is not valid UTF-8")
		return
	}
	s.system = text
	m := chat.Message{Role: "system", Content: text}
	if n := len(s.client); n > 0 && s.client[n-1].Role == "system" {
		s.client[n-1] = m
	} else {
		s.client = append(s.client, m)
	}
	fmt.Fprintln(w, "Set system message.")
}

// show answers /show as Ollama's: info, license, parameters, system, template; /show modelfile is not supported
// by bankml.
func (s *chatSession) show(args []string, w io.Writer) {
	if len(args) < 2 {
		fmt.Fprint(w, chatHelpShow)
		return
	}
	switch args[1] {
	case "info":
		s.showInfo(w)
	case "license":
		if len(s.about.license) == 0 {
			fmt.Fprintln(w, "No license was specified for this model.")
		} else {
			fmt.Fprintln(w, strings.Join(s.about.license, "\n"))
		}
	case "modelfile":
		s.refuse(w, "/show modelfile is not supported by bankml: /show parameters, /show system and /show template show its settings")
	case "parameters":
		fmt.Fprintln(w, "Model defined parameters:")
		if lines := parameterLines(s.model.Options); len(lines) == 0 {
			fmt.Fprintln(w, "  No additional parameters were specified for this model.")
		} else {
			for _, l := range lines {
				fmt.Fprintf(w, "  %s\n", l)
			}
		}
		fmt.Fprintln(w)
		if len(s.opts) > 0 {
			fmt.Fprintln(w, "User defined parameters:")
			for _, k := range slices.Sorted(maps.Keys(s.opts)) {
				fmt.Fprintf(w, "  %-*s %v\n", 30, k, s.opts[k])
			}
			fmt.Fprintln(w)
		}
	case "system":
		switch {
		case s.system != "":
			fmt.Fprintln(w, s.system+"\n")
		case s.model.System != "":
			fmt.Fprintln(w, s.model.System+"\n")
		default:
			fmt.Fprintln(w, "No system message was specified for this model.")
		}
	case "template":
		if s.tmpl.Builtin() {
			fmt.Fprintln(w, "No prompt template was specified for this model: bankml renders the conversation with ChatML:")
		}
		fmt.Fprintln(w, s.tmpl.Source())
	default:
		s.refuse(w, "Unknown command '/show %s'. Type /? for help", args[1])
	}
}

// parameterLines are a Modelfile's PARAMETERs as Ollama's /api/show lists them: one line a value (stop's
// each), the name padded to 30 columns, the value in Go syntax, in name order.
func parameterLines(opts map[string]any) []string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(opts)) {
		if l, ok := opts[k].([]string); ok {
			for _, v := range l {
				out = append(out, fmt.Sprintf("%-*s %#v", 30, k, v))
			}
			continue
		}
		out = append(out, fmt.Sprintf("%-*s %#v", 30, k, opts[k]))
	}
	return out
}

// showInfo is /show info: the model's table as Ollama's showInfo prints it (architecture, parameters, context
// length, embedding length, quantization: general.file_type's name, "unknown" when the file has none), then the
// Modelfile's parameters, system message and license.
func (s *chatSession) showInfo(w io.Writer) {
	section := func(name string, rows [][2]string) {
		if len(rows) == 0 {
			return
		}
		fmt.Fprintf(w, "  %s\n", name)
		for _, r := range rows {
			if r[0] == "" {
				fmt.Fprintf(w, "    %s\n", r[1])
			} else {
				fmt.Fprintf(w, "    %-20s%s\n", r[0], r[1])
			}
		}
		fmt.Fprintln(w)
	}
	a := s.about
	section("Model", [][2]string{{"architecture", a.arch}, {"parameters", a.params},
		{"context length", fmt.Sprint(a.ctxLength)}, {"embedding length", fmt.Sprint(a.embdLength)},
		{"quantization", a.quant}})
	var params [][2]string
	for _, l := range parameterLines(s.model.Options) {
		k, v, _ := strings.Cut(l, " ")
		params = append(params, [2]string{k, strings.TrimSpace(v)})
	}
	section("Parameters", params)
	if s.model.System != "" {
		section("System", [][2]string{{"", s.model.System}})
	}
	if len(a.license) > 0 {
		section("License", [][2]string{{"", strings.Join(a.license, "\n")}})
	}
}

// chatHelp is what /? prints (Ollama's list, with what bankml supports).
const chatHelp = `Available commands:
  /set           set session variables (/? set lists them)
  /show          show model information (/? show lists them)
  /clear         forget the conversation so far (the system message kept)
  /bye, /exit    end the conversation (as Ctrl-D does)
  /?, /help      show this help; /? shortcuts lists the keys of the line editor
/load, /save and /list are not supported by bankml. Any other line starting with / is an unknown command.
A line ending in \ continues the message on the next line; Ctrl-C stops an answer, and at the prompt ends the
conversation. Any other line is a message to the model.
`

const chatHelpSet = `Available commands:
  /set parameter ...     set a parameter for the following turns (/? parameters lists them)
  /set system <string>   set the system message
  /set history           enable history
  /set nohistory         disable history
  /set verbose           show a summary line after each answer (the default)
  /set quiet             no summary line
  /set nowordwrap        no word wrap (bankml never wraps)
  /set noformat          no format (bankml's is run's -j/--grammar)
/set wordwrap, /set format json, /set think and /set nothink are not supported by bankml.
`

const chatHelpShow = `Available commands:
  /show info         show details for this model
  /show license      show the model's license
  /show parameters   show the model's parameters and the ones set with /set parameter
  /show system       show the system message
  /show template     show the chat template
/show modelfile is not supported by bankml.
`

const chatHelpParameters = `Available parameters (Ollama's names):
  /set parameter seed <int>                  random number seed
  /set parameter num_predict <int>           max number of tokens to predict
  /set parameter top_k <int>                 pick from top k num of tokens
  /set parameter top_p <float>               pick token based on sum of probabilities
  /set parameter min_p <float>               pick token based on top token probability * min_p
  /set parameter typical_p <float>           locally typical sampling
  /set parameter num_ctx <int>               the context a turn may fill (at most the run's)
  /set parameter temperature <float>         set creativity level
  /set parameter repeat_penalty <float>      how strongly to penalize repetitions
  /set parameter repeat_last_n <int>         how far back to look for repetitions
  /set parameter presence_penalty <float>    penalize tokens already present
  /set parameter frequency_penalty <float>   penalize tokens by their frequency
  /set parameter stop <string> <string> ...  set the stop strings
`

const chatHelpShortcuts = `Available keyboard shortcuts:
  Ctrl + a            move to the beginning of the line (Home)
  Ctrl + e            move to the end of the line (End)
  Alt + Left/Right    move one word left or right
  Ctrl + k            delete the text after the cursor
  Ctrl + u            delete the text before the cursor
  Ctrl + w            delete the word before the cursor
  Ctrl + l            clear the screen
  Up, Down            the history
  Ctrl + c            stop the model from responding; at the prompt, end the conversation
  Ctrl + d            end the conversation (/bye) on an empty line
`

package main

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// chatRun runs bankml run --chat on stories260K with args and piped stdin, collecting its turns.
func chatRun(t *testing.T, stdin string, args ...string) (code int, turns []chatTurn, stdout, stderr string) {
	t.Helper()
	var o, e bytes.Buffer
	code = run(append([]string{"run", storiesPath(t), "--chat", "-t", "1"}, args...), strings.NewReader(stdin), &o, &e, func(cl *cli) {
		cl.Run.onTurn = func(tn chatTurn) { turns = append(turns, tn) }
	})
	return code, turns, o.String(), e.String()
}

// TestChatCommandsAsOllamasRun: run --chat answers Ollama's `ollama run` commands (cmd/interactive.go) itself,
// never sending them to the model: /set parameter (applied to the following turns, an unknown name or bad value
// refused in Ollama's words), /set system, /set quiet, /show, /load and /save (not supported by bankml), and any
// other line starting with "/" as an unknown command; the chat goes on after each. With piped input a refused
// command makes the exit status 1 once the conversation ends, as a refused message does.
func TestChatCommandsAsOllamasRun(t *testing.T) {
	for _, c := range []struct {
		name    string
		args    []string
		stdin   string
		code    int
		answers int
		stderr  []string // in standard error
		not     []string // not in standard error
		stdout  string   // standard output, when not ""
	}{
		{name: "an unknown command is answered, not sent, and the chat goes on", args: []string{"-n", "4"},
			stdin: "/x hello\nHi.\n", code: 1, answers: 1, stderr: []string{"Unknown command '/x'. Type /? for help", "1 command(s) refused"}},
		{name: "a line that is only a slash is an unknown command", args: []string{"-n", "4"},
			stdin: "/\n", code: 1, stderr: []string{"Unknown command '/'. Type /? for help"}},
		{name: "an unknown /set is answered as Ollama answers it", args: []string{"-n", "4"},
			stdin: "/set colour red\n", code: 1, stderr: []string{"Unknown command '/set colour'. Type /? for help"}},
		{name: "an unknown /show is answered as Ollama answers it", args: []string{"-n", "4"},
			stdin: "/show colour\n", code: 1, stderr: []string{"Unknown command '/show colour'. Type /? for help"}},
		{name: "/set parameter seed and temperature apply to the following turns", args: []string{"-n", "4"},
			stdin: "/set parameter seed 42\n/set parameter temperature 0.8\nHi.\n", answers: 1,
			stderr: []string{"Set parameter 'seed' to '42'", "Set parameter 'temperature' to '0.8'", ", seed 42), stopped"}},
		{name: "/set parameter num_predict bounds the following answers", args: []string{"-n", "8"},
			stdin: "/set parameter num_predict 2\nHi.\n", answers: 1,
			stderr: []string{"answer 2 tokens", "stopped: num_predict (/set parameter) reached"}},
		{name: "/set parameter stop stops the following answers at its strings", args: []string{"-n", "8"},
			stdin: "/set parameter stop He\nHi.\n", answers: 1, stdout: "\"\n",
			stderr: []string{"Set parameter 'stop' to 'He'", `stopped: the stop string "He" (stop (/set parameter))`}},
		{name: "an unknown parameter is refused in Ollama's words and the chat goes on", args: []string{"-n", "4"},
			stdin: "/set parameter foo 1\nHi.\n", code: 1, answers: 1, stderr: []string{`Couldn't set parameter: "unknown parameter 'foo'"`}},
		{name: "a value that is not an integer is refused naming it", args: []string{"-n", "4"},
			stdin: "/set parameter top_k x\n", code: 1, stderr: []string{`Couldn't set parameter: "invalid int value [x]"`}},
		{name: "a value serve refuses is refused naming the parameter", args: []string{"-n", "4"},
			stdin: "/set parameter repeat_last_n -2\n", code: 1, stderr: []string{`Couldn't set parameter: "option \"repeat_last_n\": must be -1 (num_ctx), 0 (off) or a count of tokens, not -2"`}},
		{name: "a NaN temperature is refused naming temperature", args: []string{"-n", "4"},
			stdin: "/set parameter temperature nan\n", code: 1, stderr: []string{"Couldn't set parameter:", "temperature: NaN is not a finite number"}},
		{name: "a parameter bankml does not apply is refused, not silently kept", args: []string{"-n", "4"},
			stdin: "/set parameter num_gpu 3\n/show parameters\n", code: 1,
			stderr: []string{`Couldn't set parameter: "bankml does not apply num_gpu`}, not: []string{"User defined parameters"}},
		{name: "/set parameter without a value lists the parameters", args: []string{"-n", "4"},
			stdin: "/set parameter top_k\n", stderr: []string{"Available parameters", "/set parameter stop <string> <string> ..."}},
		{name: "/show parameters lists the ones set", args: []string{"-n", "4"},
			stdin:  "/set parameter top_k 5\n/show parameters\n",
			stderr: []string{"Model defined parameters:\n  No additional parameters were specified for this model.", "User defined parameters:\n  top_k                          5\n"}},
		{name: "/show system says there is none, then shows the one set", args: []string{"-n", "4"},
			stdin:  "/show system\n/set system Be kind.\n/show system\n",
			stderr: []string{"No system message was specified for this model.", "Set system message.\nBe kind.\n"}},
		{name: "/show template shows the template bankml renders with", args: []string{"-n", "4"},
			stdin: "/show template\n", stderr: []string{"bankml renders the conversation with ChatML", "<|im_start|>"}},
		{name: "/show info shows the model's details", args: []string{"-n", "4"},
			stdin: "/show info\n", stderr: []string{"  Model\n    architecture        llama\n", "context length      2048", "embedding length    64"}},
		{name: "/show license says there is none", args: []string{"-n", "4"},
			stdin: "/show license\n", stderr: []string{"No license was specified for this model."}},
		{name: "/load is not supported by bankml and not sent", args: []string{"-n", "4"},
			stdin: "/load llama3\nHi.\n", code: 1, answers: 1, stderr: []string{"/load is not supported by bankml"}},
		{name: "/save is not supported by bankml and not sent", args: []string{"-n", "4"},
			stdin: "/save mine\n", code: 1, stderr: []string{"/save is not supported by bankml"}},
		{name: "/set quiet drops the summary line and /set verbose brings it back", args: []string{"-n", "2"},
			stdin: "/set quiet\nHi.\n/set verbose\nHi.\n", answers: 2,
			stderr: []string{"Set 'quiet' mode.", "Set 'verbose' mode.\nturn 2:"}, not: []string{"turn 1:"}},
		{name: "/set format is not supported by bankml", args: []string{"-n", "2"},
			stdin: "/set format json\n", code: 1, stderr: []string{"/set format is not supported by bankml"}},
		{name: "/? lists /set and /show, /? set lists /set's", args: []string{"-n", "2"},
			stdin: "/?\n/? set\n", stderr: []string{"  /set           set session variables", "  /show          show model information", "/set system <string>   set the system message"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, turns, stdout, stderr := chatRun(t, c.stdin, c.args...)
			if code != c.code || len(turns) != c.answers {
				t.Fatalf("exit %d, %d turns; want exit %d, %d turns; stderr:\n%s", code, len(turns), c.code, c.answers, stderr)
			}
			for _, w := range c.stderr {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr does not say %q:\n%s", w, stderr)
				}
			}
			for _, w := range c.not {
				if strings.Contains(stderr, w) {
					t.Errorf("stderr says %q:\n%s", w, stderr)
				}
			}
			if c.stdout != "" && stdout != c.stdout {
				t.Errorf("stdout %q, want %q", stdout, c.stdout)
			}
		})
	}
}

// TestChatSetSystemAsOllamas: /set system TEXT sets the system message as Ollama's does: at the start it is the
// conversation's system message (as --system gives it), it replaces a system message that is the conversation's
// last, and /clear keeps it; its words are joined by one space and Ollama's """ quotes are dropped.
func TestChatSetSystemAsOllamas(t *testing.T) {
	_, want, _, stderr := chatRun(t, "Hi.\n", "-n", "2", "--system", "Be kind.")
	if len(want) != 1 {
		t.Fatalf("the --system run answered %d turns; stderr:\n%s", len(want), stderr)
	}
	for _, c := range []struct {
		name  string
		args  []string
		stdin string
		turn  int // the turn (from 1) whose prompt must be the --system run's
	}{
		{name: "/set system at the start is the system message", stdin: "/set system Be kind.\nHi.\n", turn: 1},
		{name: "/set system replaces --system", args: []string{"--system", "Be rude."}, stdin: "/set system Be kind.\nHi.\n", turn: 1},
		{name: "its words are joined by one space", stdin: "/set system   Be    kind.\nHi.\n", turn: 1},
		{name: "Ollama's triple quotes are dropped", stdin: "/set system \"\"\"Be kind.\"\"\"\nHi.\n", turn: 1},
		{name: "/clear keeps the system message /set system gave", stdin: "Hi.\n/set system Be kind.\n/clear\nHi.\n", turn: 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, turns, _, stderr := chatRun(t, c.stdin, append([]string{"-n", "2"}, c.args...)...)
			if code != 0 || len(turns) < c.turn {
				t.Fatalf("exit %d, %d turns; stderr:\n%s", code, len(turns), stderr)
			}
			if got := turns[c.turn-1]; !slices.Equal(got.Prompt, want[0].Prompt) {
				t.Errorf("turn %d's prompt is %d tokens, not the --system run's %d: the system message differs", c.turn, len(got.Prompt), len(want[0].Prompt))
			}
		})
	}
}

// TestRunRefusesSpecialWithAStoredModelsStop: -sp/--special with a stored model whose Modelfile gives stop is
// refused as -r with -sp is (the stop strings are matched on the text without control tokens, so the text
// printed could not carry them), naming the Modelfile's stop parameter; a stored model without stop runs with -sp.
func TestRunRefusesSpecialWithAStoredModelsStop(t *testing.T) {
	_, models := storeEnv(t)
	t.Setenv("BANKML_MIRROR", models)
	for name, mf := range map[string]string{
		"stopper": "FROM stories260K\nPARAMETER stop \"Lily\"\n",
		"plain":   "FROM stories260K\nPARAMETER num_predict 4\n",
	} {
		p := filepath.Join(t.TempDir(), name+".Modelfile")
		if err := os.WriteFile(p, []byte(mf), 0o644); err != nil {
			t.Fatal(err)
		}
		if code, _, e := bankml(t, "create", name, "-f", p); code != 0 {
			t.Fatalf("create %s: %d %s", name, code, e)
		}
	}
	for _, c := range []struct {
		name   string
		args   []string
		code   int
		stderr string
	}{
		{name: "-sp with a Modelfile's stop is refused naming the stop parameter", args: []string{"stopper", "-p", "Once", "-n", "4", "-sp"}, code: 1,
			stderr: `run: --special (-sp) with stopper:latest's Modelfile PARAMETER stop ["Lily"]: the stop strings are found in the text without control tokens`},
		{name: "-sp with -r is refused as before", args: []string{"plain", "-p", "Once", "-r", "x", "-sp"}, code: 1,
			stderr: "-r/--reverse-prompt with --special (-sp)"},
		{name: "-r overriding the Modelfile's stop with -sp is refused for -r", args: []string{"stopper", "-p", "Once", "-r", "x", "-sp"}, code: 1,
			stderr: "-r/--reverse-prompt with --special (-sp)"},
		{name: "-sp with a stored model without stop runs", args: []string{"plain", "-p", "Once", "-sp", "-t", "1"}},
		{name: "the stored model's stop without -sp runs", args: []string{"stopper", "-p", "Once", "-n", "4", "-t", "1"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, _, e := bankml(t, append([]string{"run"}, c.args...)...)
			if code != c.code || !strings.Contains(e, c.stderr) {
				t.Errorf("exit %d; want %d and stderr with %q; stderr:\n%s", code, c.code, c.stderr, e)
			}
		})
	}
}

// TestChatCommandsOnAStoredModel: on a stored model, /show prints its Modelfile's settings (PARAMETERs as
// Ollama's /api/show lists them, SYSTEM, LICENSE), a turn its Modelfile's stop ends names that stop, and /set
// system puts the system message where Ollama's does: after the model's MESSAGEs, in place of its SYSTEM, as
// --system does.
func TestChatCommandsOnAStoredModel(t *testing.T) {
	_, models := storeEnv(t)
	t.Setenv("BANKML_MIRROR", models)
	mf := filepath.Join(t.TempDir(), "Modelfile")
	if err := os.WriteFile(mf, []byte("FROM stories260K\nPARAMETER stop \"He\"\nPARAMETER num_predict 8\nSYSTEM You tell short stories.\n"+
		"LICENSE \"\"\"Free for all.\"\"\"\nMESSAGE user Hello\nMESSAGE assistant Once upon a time\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, e := bankml(t, "create", "teller", "-f", mf); code != 0 {
		t.Fatalf("create: %d %s", code, e)
	}
	chat := func(stdin string, args ...string) (int, []chatTurn, string) {
		var o, e bytes.Buffer
		var turns []chatTurn
		code := run(append([]string{"run", "teller", "--chat", "-t", "1"}, args...), strings.NewReader(stdin), &o, &e, func(cl *cli) {
			cl.Run.onTurn = func(tn chatTurn) { turns = append(turns, tn) }
		})
		return code, turns, e.String()
	}
	_, want, e := chat("Hi.\n", "--system", "Be kind.")
	if len(want) != 1 {
		t.Fatalf("the --system run answered %d turns; stderr:\n%s", len(want), e)
	}
	for _, c := range []struct {
		name   string
		stdin  string
		turn   int      // when not 0, the turn (from 1) whose prompt must be the --system run's
		stderr []string // in standard error
	}{
		{name: "/show parameters lists the Modelfile's as Ollama's /api/show does", stdin: "/show parameters\n",
			stderr: []string{"Model defined parameters:\n  num_predict                    8\n  stop                           \"He\"\n"}},
		{name: "/show system shows the model's SYSTEM", stdin: "/show system\n", stderr: []string{"You tell short stories.\n"}},
		{name: "/show license shows the model's LICENSE", stdin: "/show license\n", stderr: []string{"Free for all."}},
		{name: "/show info adds the Modelfile's settings", stdin: "/show info\n",
			stderr: []string{"  Parameters\n    num_predict         8\n    stop                \"He\"\n", "  System\n    You tell short stories.\n", "  License\n    Free for all.\n"}},
		{name: "a turn the Modelfile's stop ends names it", stdin: "Hi.\n", stderr: []string{`stopped: the stop string "He" (teller:latest's stop)`}},
		{name: "/set system goes after the MESSAGEs in place of the SYSTEM, as --system", stdin: "/set system Be kind.\nHi.\n", turn: 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, turns, stderr := chat(c.stdin)
			if code != 0 {
				t.Fatalf("exit %d; stderr:\n%s", code, stderr)
			}
			for _, w := range c.stderr {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr does not say %q:\n%s", w, stderr)
				}
			}
			if c.turn > 0 && (len(turns) < c.turn || !slices.Equal(turns[c.turn-1].Prompt, want[0].Prompt)) {
				t.Errorf("turn %d's prompt is not the --system run's (%d turns)", c.turn, len(turns))
			}
		})
	}
}

package main

import (
	"strings"
	"testing"

	"github.com/alecthomas/kong"
)

// parseServe parses a `bankml serve` command line as main does (llamaArgs, then kong) and returns the
// command and llamaArgs' warnings.
func parseServe(t *testing.T, args ...string) (*serveCmd, []string, error) {
	t.Helper()
	var cl cli
	parser, err := kong.New(&cl, kong.Vars{"nproc": "1", "version": "test"}, kong.WithHyphenPrefixedParameters(true))
	if err != nil {
		t.Fatal(err)
	}
	args, warnings, err := llamaArgs(append([]string{"serve"}, args...), valueFlags(parser.Model, "serve"))
	if err == nil {
		_, err = parser.Parse(args)
	}
	return &cl.Serve, warnings, err
}

// TestServeSlotsFlag: serve takes llama-server's --slots and --no-slots (common/arg.cpp: endpoint_slots,
// "expose slots monitoring endpoint (default: enabled)"), the last one given counting as in arg.cpp's
// parse_cli_args, and gives serve.Options.NoSlots.
func TestServeSlotsFlag(t *testing.T) {
	cases := []struct {
		name  string
		args  []string
		slots bool
	}{
		{"without either flag GET /slots is served, llama-server's default", nil, true},
		{"--slots serves it", []string{"--slots"}, true},
		{"--no-slots turns it off", []string{"--no-slots"}, false},
		{"--no_slots reads as --no-slots, as in llama.cpp", []string{"--no_slots"}, false},
		{"--slots then --no-slots turns it off, the last counting", []string{"--slots", "--no-slots"}, false},
		{"--no-slots then --slots serves it, the last counting", []string{"--no-slots", "--slots"}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cmd, _, err := parseServe(t, append([]string{"m.gguf"}, c.args...)...)
			if err != nil {
				t.Fatalf("%q: %v", c.args, err)
			}
			if cmd.Slots != c.slots {
				t.Errorf("%q: Slots %v, want %v", c.args, cmd.Slots, c.slots)
			}
			if so := cmd.serveOptions(nil, nil, nil, nil, ""); so.NoSlots != !c.slots {
				t.Errorf("%q: serve.Options.NoSlots %v, want %v", c.args, so.NoSlots, !c.slots)
			}
		})
	}
}

// TestServeSlotsEnvironment: llama.cpp's LLAMA_ARG_ENDPOINT_SLOTS and LLAMA_ARG_NO_ENDPOINT_SLOTS (arg.cpp's
// set_env of --slots/--no-slots) are treated as every LLAMA_ARG_* variable is (llamaenv.go): not read, one
// warning line naming the flag to give instead, and that flag is one serve takes.
func TestServeSlotsEnvironment(t *testing.T) {
	cases := []struct {
		name, env, flag string
		slots           bool // with the flag the warning names
	}{
		{"LLAMA_ARG_NO_ENDPOINT_SLOTS names --no-slots, which serve takes", "LLAMA_ARG_NO_ENDPOINT_SLOTS", "--no-slots", false},
		{"LLAMA_ARG_ENDPOINT_SLOTS names --slots, which serve takes", "LLAMA_ARG_ENDPOINT_SLOTS", "--slots", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			want := c.env + " is set: bankml does not read llama.cpp's environment variables (llama.cpp's " + c.flag + "); give the flag on the command line"
			if got := strings.Join(llamaEnvWarnings([]string{c.env + "=1"}), "|"); got != want {
				t.Errorf("warning %q, want %q", got, want)
			}
			t.Setenv(c.env, "1")
			cmd, _, err := parseServe(t, "m.gguf")
			if err != nil || !cmd.Slots {
				t.Errorf("with %s set and no flag: Slots %v, %v; want true (the variable is not read)", c.env, cmd.Slots, err)
			}
			cmd, _, err = parseServe(t, "m.gguf", c.flag)
			if err != nil || cmd.Slots != c.slots {
				t.Errorf("serve %s: Slots %v, %v; want %v", c.flag, cmd.Slots, err, c.slots)
			}
		})
	}
}

// TestServeHelpListsTheSlotsFlags: `bankml serve --help` lists --slots and --no-slots (kong's --[no-]slots)
// and says what --no-slots answers.
func TestServeHelpListsTheSlotsFlags(t *testing.T) {
	code, out, _ := runCLI("serve", "--help")
	cases := []struct {
		name, want string
	}{
		{"the flag is listed with its negation", "--[no-]slots"},
		{"the help names llama-server's flag", "llama-server's --slots"},
		{"the help says what --no-slots answers", "--no-slots answers it with llama-server's 501"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			// kong wraps the help at 80 columns: compare with the white space collapsed
			if flat := strings.Join(strings.Fields(out), " "); code != 0 || !strings.Contains(flat, c.want) {
				t.Errorf("bankml serve --help: exit %d, no %q in:\n%s", code, c.want, out)
			}
		})
	}
}

package main

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/bankml/bankml/internal/reference"
	"github.com/bankml/bankml/internal/testdata"
)

// TestRunProcessesEscapes: `bankml run` processes the prompt's escapes as llama.cpp's common_params_parse does
// (common/arg.cpp:917, params.escape true by default, common/common.h:565): -p and the prompt read from standard
// input (the counterpart of -f FNAME, which also sets params.prompt) are escaped unless --no-escape; -e/--escape
// turns it back on. Each continuation is checked against the reference's greedy continuation of the text
// llama.cpp would tokenize.
func TestRunProcessesEscapes(t *testing.T) {
	lib, err := reference.Load()
	if err != nil {
		testdata.Absent(t, "reference not installed (run scripts/install-reference.sh): %v", err)
	}
	model := storiesPath(t)
	rm, err := lib.LoadModel(model)
	if err != nil {
		t.Fatal(err)
	}
	defer rm.Close()
	for _, tc := range []struct {
		args  []string
		stdin string
		want  string // the text llama.cpp tokenizes
	}{
		{[]string{"-p", `Once\nupon a time`}, "", "Once\nupon a time"},
		{[]string{"-p", `Tom said \"hi\"\tand \x41nna \\n`}, "", "Tom said \"hi\"\tand Anna \\n"},
		{[]string{"--no-escape", "-p", `Once\nupon a time`}, "", `Once\nupon a time`},
		{[]string{"--no-escape", "-e", "-p", `Once\nupon`}, "", "Once\nupon"},
		{[]string{"--escape", "-p", `Once\q`}, "", `Once\q`}, // an unknown escape stays as it is
		{nil, `Once\nupon a time` + "\n", "Once\nupon a time"},
		{[]string{"--no-escape"}, `Once\nupon a time` + "\n", `Once\nupon a time`},
	} {
		want := string(append(refContinuation(t, rm, tc.want, 12), '\n'))
		var o, e bytes.Buffer
		args := append([]string{"run", model, "-n", "12", "-t", "1", "--no-display-prompt"}, tc.args...)
		if code := run(args, strings.NewReader(tc.stdin), &o, &e); code != 0 {
			t.Fatalf("%v: exit %d: %s", tc.args, code, e.String())
		}
		if o.String() != want {
			t.Errorf("%v stdin %q:\n got %q\nwant %q (the reference's continuation of %q)", tc.args, tc.stdin, o.String(), want, tc.want)
		}
	}
}

// TestRunChatEscapes: with --chat only -p (params.prompt) is escaped; --system (params.system_prompt) and the
// messages read from standard input are taken as they are, as llama-cli does (common/arg.cpp:917 escapes
// params.prompt, not system_prompt; tools/cli/cli-context.cpp reads messages without string_process_escapes).
// Each conversation's rendered prompt must equal the one of the same texts given literally with --no-escape.
func TestRunChatEscapes(t *testing.T) {
	model := storiesPath(t)
	for _, tc := range []struct {
		args, literal []string
		stdin         string
	}{
		{[]string{"-p", `a\nb`, "--single-turn"}, []string{"-p", "a\nb", "--single-turn"}, ""},
		{[]string{"--system", `x\ny`, "-p", `a\tb`, "--single-turn"}, []string{"--system", `x\ny`, "-p", "a\tb", "--single-turn"}, ""},
		{[]string{"--system", `x\ty`}, []string{"--system", `x\ty`}, `a\nb` + "\n"},
	} {
		prompt := func(args []string, stdin string) []int32 {
			var turns []chatTurn
			var o, e bytes.Buffer
			args = append([]string{"run", model, "--chat", "-n", "2", "-t", "1"}, args...)
			code := run(args, strings.NewReader(stdin), &o, &e, func(c *cli) {
				c.Run.onTurn = func(t chatTurn) { turns = append(turns, t) }
			})
			if code != 0 || len(turns) != 1 {
				t.Fatalf("%v: exit %d, %d turns: %s", args, code, len(turns), e.String())
			}
			return turns[0].Prompt
		}
		got, want := prompt(tc.args, tc.stdin), prompt(append([]string{"--no-escape"}, tc.literal...), tc.stdin)
		if !slices.Equal(got, want) {
			t.Errorf("%v stdin %q: prompt %v, want %v (%v with --no-escape)", tc.args, tc.stdin, got, want, tc.literal)
		}
	}
}

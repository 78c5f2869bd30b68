package main

import (
	"strings"
	"testing"
)

// TestUsageErrorsNameTheProblem: a word that is no command was "unexpected argument nosuch" while `help nosuch`
// said unknown command; a negative number where an index or token id is expected was "unknown flag -1, did you
// mean "-h"?" when the argument before it was missing too; and ledger verify's --root/--size said "go together"
// for a --size 0 given with its --root (and took --size 0 alone silently). Each now names the argument or flag
// and what it takes.
func TestUsageErrorsNameTheProblem(t *testing.T) {
	dir, head := writeLedger(t, 3)
	model := storiesPath(t)
	for _, c := range []struct {
		name string
		args []string
		want string // standard error, whole
	}{
		{name: "a word that is no command is an unknown command, as ollama says",
			args: []string{"nosuch"}, want: `bankml: unknown command "nosuch" (see bankml --help)`},
		{name: "a misspelt command is an unknown command with kong's suggestion",
			args: []string{"rnu"}, want: `bankml: unknown command "rnu", did you mean one of "run", "rm"? (see bankml --help)`},
		{name: "a word that is no subcommand is an unknown command of its command",
			args: []string{"ledger", "nosuch"}, want: `bankml: ledger: unknown command "nosuch" (see bankml ledger --help)`},
		{name: "an extra argument to a command that takes arguments stays an unexpected argument",
			args: []string{"run", model, "extra"}, want: `bankml: run: unexpected argument extra (see bankml run --help)`},
		{name: "a negative token id after the file is out of the ids' range, named IDS",
			args: []string{"detokenize", model, "-1"}, want: `bankml: detokenize: IDS: value -1 out of range [0, n_vocab) (token ids, below the model's vocabulary size; see bankml detokenize --help)`},
		{name: "a negative token id after other ids is out of the ids' range",
			args: []string{"detokenize", model, "5", "-12"}, want: `bankml: detokenize: IDS: value -12 out of range [0, n_vocab) (token ids, below the model's vocabulary size; see bankml detokenize --help)`},
		{name: "a negative token id without the file is out of the ids' range",
			args: []string{"detokenize", "-1"}, want: `bankml: detokenize: IDS: value -1 out of range [0, n_vocab) (token ids, below the model's vocabulary size; see bankml detokenize --help)`},
		{name: "a negative index without the ledger folder is out of the index's range",
			args: []string{"ledger", "prove", "-1"}, want: `bankml: ledger prove: I: value -1 out of range [0, inf) (the entry's index, from 0; see bankml ledger prove --help)`},
		{name: "a negative index after the folder is out of the index's range",
			args: []string{"ledger", "prove", dir, "-7"}, want: `bankml: ledger prove: I: value -7 out of range [0, inf) (the entry's index, from 0; see bankml ledger prove --help)`},
		{name: "a size 0 with its root is out of the size's range",
			args: []string{"ledger", "verify", dir, "--root", head.Root, "--size", "0"}, want: `bankml: ledger verify: --size: value 0 out of range [1, inf) (the entry count of the head given by --root: a published head has at least one entry)`},
		{name: "a size 0 alone is out of the size's range",
			args: []string{"ledger", "verify", "--size", "0", dir}, want: `bankml: ledger verify: --size: value 0 out of range [1, inf) (the entry count of the head given by --root: a published head has at least one entry)`},
		{name: "a root without its size asks for the size",
			args: []string{"ledger", "verify", dir, "--root", head.Root}, want: `bankml: ledger verify: --root needs --size: the entry count of the head whose root it is`},
		{name: "a size without its root asks for the root",
			args: []string{"ledger", "verify", dir, "--size", "3"}, want: `bankml: ledger verify: --size 3 needs --root: the root of the head of 3 entries`},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(c.args...)
			if code != 1 || stdout != "" || strings.TrimRight(stderr, "\n") != c.want {
				t.Fatalf("exit %d, stdout %q, stderr\n%s\nwant exit 1 and\n%s", code, stdout, stderr, c.want)
			}
		})
	}
	if code, stdout, stderr := runCLI("ledger", "verify", dir, "--root", head.Root, "--size", "3"); code != 0 || !strings.Contains(stdout, `"ok": true`) {
		t.Fatalf("the head itself: exit %d\n%s%s", code, stdout, stderr)
	}
}

package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bankml/bankml/admit"
)

// TestServeRefusesBeforeListening: a model that is not admitted never listens; the command exits 2 with
// the reason (an unpinned model without --unpinned, a wrong pin, a file that is not GGUF), 1 on usage errors.
func TestServeRefusesBeforeListening(t *testing.T) {
	model := storiesPath(t)
	bad := filepath.Join(t.TempDir(), "bad.gguf")
	if err := os.WriteFile(bad, []byte("GGUF but not really"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"serve", model, "--listen", "127.0.0.1:0"}, 2, "has no pin"},
		// The refusal of an unpinned file says what to type: pin it, store it, or serve it unpinned.
		{[]string{"serve", model, "--listen", "127.0.0.1:0"}, 2, "bankml serve " + model + " --manifest sha256:HEX"},
		{[]string{"serve", model, "--listen", "127.0.0.1:0"}, 2, "bankml pull " + model + " --name NAME  then  bankml serve NAME"},
		{[]string{"serve", model, "--listen", "127.0.0.1:0"}, 2, "bankml serve " + model + " --unpinned"},
		{[]string{"serve", model, "--manifest", strings.Repeat("0", 64), "--listen", "127.0.0.1:0"}, 2, "refused"},
		{[]string{"serve", bad, "--unpinned", "--listen", "127.0.0.1:0"}, 2, "refused"},
		{[]string{"serve", model, "--unpinned", "--listen", "nonsense"}, 1, "--listen"},
		{[]string{"serve", model, "--unpinned", "--parallel", "0"}, 1, "--parallel"},
		{[]string{"serve", model, "--unpinned", "-np", "0"}, 1, "-np/--parallel: value 0 out of range [1, 256]"},
		{[]string{"serve", model, "--unpinned", "-np", "-1"}, 1, "-np/--parallel -1: -np -1 (auto: llama-server's 4 slots sharing one unified KV cache) is not supported"},
		{[]string{"serve", model, "--unpinned", "-np", "-3"}, 1, "-np/--parallel -3: -np -1 (auto"},
		{[]string{"serve", model, "--unpinned", "-np", "100000"}, 1, "-np/--parallel: value 100000 out of range [1, 256]"},
		{[]string{"serve", model, "--unpinned", "-np", "257", "-c", "1000000"}, 1, "-np/--parallel: value 257 out of range [1, 256]"},
		{[]string{"serve", model, "--unpinned", "-c", "-5"}, 1, "-c/--ctx-size: value -5 out of range [0, 1073741824]"},
		{[]string{"serve", model, "--unpinned", "-n", "3000000000", "--listen", "127.0.0.1:0"}, 1, "-n/--n-predict: value 3000000000 out of range [-2147483648, 2147483647] (llama.cpp takes a 32-bit int)"},
		{[]string{"serve", model, "--unpinned", "-n", "-2147483649", "--listen", "127.0.0.1:0"}, 1, "-n/--n-predict: value -2147483649 out of range"},
		{[]string{"serve", model, "--unpinned", "-c", "2147483648", "--listen", "127.0.0.1:0"}, 1, "serve: -c/--ctx-size: value 2147483648 out of range [0, 1073741824] (0: the model's training context)"},
		{[]string{"serve", model, "--unpinned", "-np", "9999999999", "--listen", "127.0.0.1:0"}, 1, "serve: -np/--parallel: value 9999999999 out of range [1, 256] (slots; 256 is llama.cpp's LLAMA_MAX_SEQ)"},
		// -n -2 and lower pass (llama-server takes any int): the next check, --port, is what refuses.
		{[]string{"serve", model, "--unpinned", "-n", "-2", "--port", "70000"}, 1, "--port: value 70000 out of range [0, 65535]"},
		{[]string{"serve", model, "--unpinned", "-n", "-2147483648", "--port", "70000"}, 1, "--port: value 70000 out of range [0, 65535]"},
		{[]string{"serve", model, "--unpinned", "--listen", "127.0.0.1:0", "--port", "9"}, 1, "--listen and --host/--port both given"},
		{[]string{"serve", model, "--unpinned", "--listen", "127.0.0.1:0", "--host", "::1"}, 1, "--listen and --host/--port both given"},
		{[]string{"serve", model, "--unpinned", "--port", "70000"}, 1, "--port: value 70000 out of range [0, 65535]"},
	} {
		code, out, stderr := runCLI(c.args...)
		if code != c.code || out != "" || !strings.Contains(stderr, c.msg) || strings.Contains(stderr, "listening") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit %d naming %q", c.args, code, out, stderr, c.code, c.msg)
		}
	}
}

// TestServeCheckSlots: -c and -np that leave a slot no context are refused naming both flags (a plain error:
// exit 1 when Run finds it from the flags alone; admitOptions makes it a refusal, below); cases from
// serve.TestSlotContext's worked llama.cpp rule.
func TestServeCheckSlots(t *testing.T) {
	for _, c := range []struct {
		ctx, parallel, train int
		want                 string // in the error; "" none
	}{
		{0, 1, 4096, ""},
		{0, 4, 4096, ""},
		{256, 256, 8192, ""},
		{256, 300, 8192, "-c/--ctx-size 256 with -np/--parallel 300: context size 256 shared by 300 slots leaves each none"},
		{0, 1000, 512, "leaves each none"},
	} {
		err := (&serveCmd{Ctx: c.ctx, Parallel: c.parallel}).checkSlots(c.train)
		var ee *exitError
		switch {
		case c.want == "" && err != nil:
			t.Errorf("-c %d -np %d, train %d: %v", c.ctx, c.parallel, c.train, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want) || errors.As(err, &ee)):
			t.Errorf("-c %d -np %d, train %d: %v; want a usage error naming %q", c.ctx, c.parallel, c.train, err, c.want)
		}
	}
}

// byteCounter counts the bytes written to it (the bytes admit.Open hashed, through Options.Progress).
type byteCounter struct{ n int }

func (b *byteCounter) Write(p []byte) (int, error) { b.n += len(p); return len(p), nil }

// TestServeChecksSlotsFromTheHeaderBeforeHashing: serve's -c/-np check against the model's training context
// runs from the GGUF header inside admission (admitOptions), before the file is hashed and so before the
// history is opened, and refuses the model (exit 2, docs/cli.md "Exit status": settings the model cannot run
// with); settings that fit pass and the file is hashed.
func TestServeChecksSlotsFromTheHeaderBeforeHashing(t *testing.T) {
	model := storiesPath(t) // context_length 2048
	for _, c := range []struct {
		name     string
		cmd      serveCmd
		refused  string // "" admitted
		noHashed bool
	}{
		{"one slot over the training context is admitted", serveCmd{Parallel: 1}, "", false},
		{"256 slots sharing the training context each get a share and are admitted", serveCmd{Parallel: 256}, "", false},
		// Above 256 slots Run refuses -np first (LLAMA_MAX_SEQ); the rule itself is what is held here.
		{"3000 slots sharing the training context leave each none: refused before hashing", serveCmd{Parallel: 3000}, "-c/--ctx-size 0 with -np/--parallel 3000: context size 2048 shared by 3000 slots leaves each none", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			var hashed byteCounter
			o := c.cmd.admitOptions(admit.AllowUnpinned, nil)
			o.Progress = &hashed
			m, err := admit.Open(model, o)
			if err == nil {
				m.Close()
			}
			switch {
			case c.refused == "" && err != nil:
				t.Errorf("admitted with an error: %v", err)
			case c.refused != "" && (err == nil || !errors.Is(err, admit.ErrRefused) || !strings.Contains(err.Error(), c.refused)):
				t.Errorf("error %v; want a refusal naming %q", err, c.refused)
			case c.noHashed && hashed.n != 0:
				t.Errorf("refused after hashing %d bytes; want the refusal from the header", hashed.n)
			case !c.noHashed && hashed.n == 0:
				t.Errorf("admitted without hashing the file")
			}
		})
	}
}

// TestServeAddress checks the listening address from llama-server's --host and --port (defaults 127.0.0.1
// and 8080) or --listen.
func TestServeAddress(t *testing.T) {
	str := func(s string) *string { return &s }
	num := func(n int) *int { return &n }
	for _, c := range []struct {
		cmd  serveCmd
		want string
	}{
		{serveCmd{}, "127.0.0.1:8080"},
		{serveCmd{Host: str("0.0.0.0")}, "0.0.0.0:8080"},
		{serveCmd{Port: num(9000)}, "127.0.0.1:9000"},
		{serveCmd{Host: str("::1"), Port: num(0)}, "[::1]:0"},
		{serveCmd{Listen: str("localhost:81")}, "localhost:81"},
	} {
		if got, err := c.cmd.address(); err != nil || got != c.want {
			t.Errorf("%+v: %q, %v; want %q", c.cmd, got, err, c.want)
		}
	}
}

// TestServeRefusesACacheTypeTheHeadsDoNotFitBeforeAnyWork: -ctk/-ctv types the model's heads cannot take
// (stories260K's head size 8 is not a multiple of a quantized block's 32) are refused from the header, exit
// 2 with the engine's words, before the file is hashed (no "admitted:" line) and before --history is opened
// (its folder is never made).
func TestServeRefusesACacheTypeTheHeadsDoNotFitBeforeAnyWork(t *testing.T) {
	model := storiesPath(t)
	for _, c := range []struct {
		name string
		kv   []string
		msg  string
	}{
		{"a q8_0 K cache", []string{"-ctk", "q8_0"}, "K cache type q8_0 with block size 32 does not divide n_embd_head_k=8"},
		{"a q4_0 V cache", []string{"--cache-type-v", "q4_0"}, "V cache type q4_0 with block size 32 does not divide n_embd_head_v=8"},
	} {
		t.Run(c.name, func(t *testing.T) {
			history := filepath.Join(t.TempDir(), "history")
			args := append([]string{"serve", model, "--unpinned", "--listen", "127.0.0.1:0", "--history", history}, c.kv...)
			code, _, stderr := runCLI(args...)
			if code != 2 || !strings.Contains(stderr, "bankml: serve: "+model+": "+c.msg) {
				t.Errorf("exit %d, stderr %q; want 2 and %q", code, stderr, c.msg)
			}
			for _, work := range []string{"admitted:", "history:", "listening"} {
				if strings.Contains(stderr, work) {
					t.Errorf("stderr %q: %q before the refusal", stderr, work)
				}
			}
			if _, err := os.Stat(history); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("--history %s: %v; want it never made", history, err)
			}
		})
	}
}

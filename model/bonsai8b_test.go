package model

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/bankml/bankml/internal/testdata"
)

// TestQwen3Bonsai8BMatchesReference (BANKML_ORACLE_HEAVY=1): greedy
// continuations of 2 chat prompts, 16 tokens each, on the Bonsai-8B-shaped
// Q1_0, Q2_0 and TQ2_0 files that `bankml synth` writes (real Qwen3
// vocabulary), token-identical to the reference on 2 threads. The files are
// made once, outside the repository:
//
//	bankml synth /tmp/b8-Q1_0.gguf --arch qwen3 --preset bonsai-8b --type q1_0 --vocab qwen3
//	bankml synth /tmp/b8-Q2_0.gguf --arch qwen3 --preset bonsai-8b --type q2_0 --vocab qwen3
//	bankml synth /tmp/b8-TQ2_0.gguf --arch qwen3 --preset bonsai-8b --type tq2_0 --vocab qwen3
func TestQwen3Bonsai8BMatchesReference(t *testing.T) {
	if !heavy() {
		t.Skipf("8B shapes with portable kernels take tens of minutes; set %s=1", EnvHeavy)
	}
	lib := refLib(t)
	for _, typ := range []string{"Q1_0", "Q2_0", "TQ2_0"} {
		t.Run(typ, func(t *testing.T) {
			path := "/tmp/b8-" + typ + ".gguf"
			if _, err := os.Stat(path); err != nil {
				testdata.Absent(t, "%s absent: bankml synth %s --arch qwen3 --preset bonsai-8b --type %s --vocab qwen3", path, path, strings.ToLower(typ))
			}
			rm, err := lib.LoadModel(path)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(rm.Close)
			p := &pair{name: "bonsai-8b-" + typ, m: loadModel(t, path), ref: rm}
			var report []string
			agreed := 0
			for _, c := range shortChats[:2] {
				prompt := p.tokenize(t, chatML(c.system, c.user))
				ss := newSession(t, p, 2)
				got, _, same := ss.turn(t, prompt, 16, true)
				if same {
					agreed++
				}
				report = append(report, fmt.Sprintf("%d-token prompt, %d tokens", len(prompt), len(got)))
				ss.c.Close()
				ss.ref.Close()
			}
			t.Logf("%s: %d of 2 prompts token-identical (%s)", p.name, agreed, strings.Join(report, "; "))
		})
	}
}

package train

import "testing"

// TestConfigValidateNamesTheFlagsThatDisagree: Config.Validate quoted the whole config struct for a size below its
// least and said "7 heads of 4 KV heads over n_embd 256: want n_embd a multiple of the heads, …" for sizes that do
// not fit together, naming no flag. It names each size by the flag of bankml train that sets it, as
// Options.Validate does, and for sizes that disagree both flags and why.
func TestConfigValidateNamesTheFlagsThatDisagree(t *testing.T) {
	good := Config{Vocab: 32, Embd: 256, Layers: 2, Heads: 8, KVHeads: 4, FF: 512, Seq: 64, RMSEps: 1e-5, RopeBase: 10000, Mode: ModeTernary}
	for _, c := range []struct {
		name string
		edit func(*Config)
		want string // "": valid
	}{
		{name: "the student's defaults are valid", edit: func(*Config) {}},
		{name: "a float model takes sizes that are no whole blocks", edit: func(c *Config) { c.Mode, c.Embd, c.FF = ModeFloat, 96, 100 }},
		{name: "an n_embd that is no multiple of the heads names both flags",
			edit: func(c *Config) { c.Heads = 7 },
			want: "train: --n-embd 256 is not a multiple of --n-head 7: each head takes n_embd/n_head dimensions"},
		{name: "heads that are no multiple of the K/V heads name both flags",
			edit: func(c *Config) { c.KVHeads = 3 },
			want: "train: --n-head 8 is not a multiple of --n-head-kv 3: each K/V head serves n_head/n_head_kv heads"},
		{name: "an odd head size names both flags and the size",
			edit: func(c *Config) { c.Heads, c.KVHeads = 256, 1 },
			want: "train: --n-embd 256 over --n-head 256 is a head size of 1, which is odd: rotary embedding turns the head's dimensions in pairs"},
		{name: "a head count of 0 is out of the flag's range, not the whole config quoted",
			edit: func(c *Config) { c.Heads = 0 },
			want: "train: --n-head: value 0 out of range [1, inf)"},
		{name: "a sequence of one token is out of --seq's range",
			edit: func(c *Config) { c.Seq = 1 },
			want: "train: --seq: value 1 out of range [2, inf) (a token and the one after it at least)"},
		{name: "a vocabulary of one token is named as the teacher's",
			edit: func(c *Config) { c.Vocab = 1 },
			want: "train: vocabulary size: value 1 out of range [2, inf) (the teacher's n_vocab)"},
		{name: "a ternary n_embd that is no whole number of blocks names the flag",
			edit: func(c *Config) { c.Embd, c.Heads, c.KVHeads = 96, 4, 2 },
			want: "train: --n-embd 96 is not a multiple of 256: a ternary model's matrices are whole TQ2_0 blocks of 256 weights (--mode float takes any size)"},
		{name: "a ternary n_ff that is no whole number of blocks names the flag",
			edit: func(c *Config) { c.FF = 100 },
			want: "train: --n-ff 100 is not a multiple of 256: a ternary model's matrices are whole TQ2_0 blocks of 256 weights (--mode float takes any size)"},
		{name: "a zero rms_eps is out of its range",
			edit: func(c *Config) { c.RMSEps = 0 },
			want: "train: rms_eps: value 0 out of range (0, inf)"},
		{name: "an unknown mode is named with the modes",
			edit: func(c *Config) { c.Mode = 7 },
			want: "train: mode 7: want float, ternary or frozen"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := good
			c.edit(&cfg)
			err := cfg.Validate()
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != c.want {
				t.Fatalf("Validate: %q, want %q", got, c.want)
			}
		})
	}
}

package train

import (
	"math"
	"testing"
)

// TestOptionsValidateNamesTheFlag: Options.Validate named options as "steps 0, batch 8 and warmup 50" or "lr, min_lr,
// weight_decay, clip" all at once; it now names the one option that is out of range by the flag of bankml train
// that sets it, in the CLI's range wording, so a library caller and a user read the same line.
func TestOptionsValidateNamesTheFlag(t *testing.T) {
	for _, c := range []struct {
		name string
		set  func(*Options)
		want string
	}{
		{name: "no steps are named --steps", set: func(o *Options) { o.Steps = 0 }, want: "train: --steps: value 0 out of range [1, inf)"},
		{name: "no batch is named --batch", set: func(o *Options) { o.Batch = -1 }, want: "train: --batch: value -1 out of range [1, inf)"},
		{name: "a negative warm-up is named --warmup", set: func(o *Options) { o.Warmup = -1 }, want: "train: --warmup: value -1 out of range [0, inf)"},
		{name: "a learning rate of 0 is named --lr", set: func(o *Options) { o.LR = 0 }, want: "train: --lr: value 0 out of range (0, inf)"},
		{name: "an infinite learning rate is named --lr", set: func(o *Options) { o.LR = math.Inf(1) }, want: "train: --lr: value +Inf out of range (0, inf)"},
		{name: "a final rate above the peak is named --min-lr", set: func(o *Options) { o.MinLR = 0.5 }, want: "train: --min-lr: value 0.5 out of range [0, 0.002] (at most --lr)"},
		{name: "a negative decay is named --weight-decay", set: func(o *Options) { o.WeightDecay = -0.1 }, want: "train: --weight-decay: value -0.1 out of range [0, inf)"},
		{name: "a NaN clip is named --clip", set: func(o *Options) { o.Clip = math.NaN() }, want: "train: --clip: value NaN out of range [0, inf) (0: off)"},
		{name: "a weight above 1 is named --lambda", set: func(o *Options) { o.Lambda = 2 }, want: "train: --lambda: value 2 out of range [0, 1] (the weight of the teacher's soft targets)"},
		{name: "a beta of 1 is named by its field", set: func(o *Options) { o.Beta2 = 1 }, want: "train: Beta2: value 1 out of range [0, 1)"},
		{name: "the defaults are valid", set: func(*Options) {}, want: ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			o := DefaultOptions()
			c.set(&o)
			got := ""
			if err := o.Validate(); err != nil {
				got = err.Error()
			}
			if got != c.want {
				t.Fatalf("got %q, want %q", got, c.want)
			}
		})
	}
}

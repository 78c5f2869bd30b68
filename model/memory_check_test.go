package model

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bankml/bankml/gguf"
	"github.com/bankml/bankml/internal/synth"
	"github.com/bankml/bankml/quant"
)

// tinyQ2 writes synth's tiny qwen3 shape with Q2_0 projections, a Q8_0 token_embd and a Q2_0 output, and
// returns its path.
func tinyQ2(t *testing.T) string {
	t.Helper()
	shape, err := synth.Preset("tiny")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "q2.gguf")
	if _, err := synth.WriteFile(path, synth.Config{Arch: "qwen3", Shape: shape, Weight: gguf.Q2_0, Embd: gguf.Q8_0, Output: gguf.Q2_0}); err != nil {
		t.Fatal(err)
	}
	return path
}

// fakeBound is a MemoryBound of n bytes read from file ("" for RAM).
func fakeBound(n uint64, file string) MemoryBound {
	return func() (uint64, string) { return n, file }
}

// TestCheckMemoryCountsWeightsSlotsAndCacheTypes: the memory check counts the model's weights and every
// slot's full KV cache at its real cache types against the bound (a fake one here, whatever the machine),
// and a refusal names the bytes, the bound and the flags that change them.
func TestCheckMemoryCountsWeightsSlotsAndCacheTypes(t *testing.T) {
	m := loadModel(t, tinyQ2(t))
	w := m.WeightBytes()
	// Bytes per cell over every layer, by hand: n_layer × n_embd_k_gqa values of K and of V.
	vals := uint64(m.HP.NLayer * m.HP.NHeadKV * m.HP.HeadDim)
	f16 := CacheTypes{K: gguf.F16, V: gguf.F16}
	q8 := CacheTypes{K: gguf.Q8_0, V: gguf.Q8_0}
	q4 := CacheTypes{K: gguf.Q4_0, V: gguf.Q4_0}
	perCell := func(t CacheTypes) uint64 {
		size := map[gguf.GGMLType]uint64{gguf.F16: 64, gguf.Q8_0: 34, gguf.Q4_0: 18} // bytes per 32 values
		return vals * (size[t.K] + size[t.V]) / 32
	}
	const big = 1 << 20 // cells: the caches dwarf the weights
	for _, tc := range []struct {
		name   string
		nCtx   int
		slots  int
		types  CacheTypes
		bound  uint64
		file   string
		want   []string // "" in want[0]: allowed
		absent []string
	}{
		{name: "one f16 context that fits beside the weights exactly is allowed",
			nCtx: big, slots: 1, types: f16, bound: w + big*perCell(f16)},
		{name: "one f16 context a byte over the bound is refused naming -c and -ctk/-ctv, not -np",
			nCtx: big, slots: 1, types: f16, bound: w + big*perCell(f16) - 1,
			want:   []string{"a KV cache of 1048576 tokens", "-ctk f16 -ctv f16", "this machine's", "of RAM", "-c)", "-ctk/-ctv q8_0 or q4_0"},
			absent: []string{"-np"}},
		{name: "four slots are counted four times: refused where one would fit, naming -np",
			nCtx: big, slots: 4, types: f16, bound: w + 4*big*perCell(f16) - 1,
			want: []string{"4 slots' KV caches of 1048576 tokens each", "fewer slots (-np)", "-c)"}},
		{name: "four slots that fit together are allowed",
			nCtx: big, slots: 4, types: f16, bound: w + 4*big*perCell(f16)},
		{name: "q4_0 caches are counted at their size: a bound an f16 cache exceeds holds them",
			nCtx: big, slots: 1, types: q4, bound: w + big*perCell(q4)},
		{name: "q8_0 caches over the bound are refused suggesting q4_0",
			nCtx: big, slots: 2, types: q8, bound: w + 2*big*perCell(q8) - 1,
			want: []string{"-ctk q8_0 -ctv q8_0", "(-ctk/-ctv q4_0)"}},
		{name: "q4_0 caches over the bound suggest no smaller cache type",
			nCtx: big, slots: 1, types: q4, bound: w + big*perCell(q4) - 1,
			want: []string{"-ctk q4_0 -ctv q4_0", "-c)"}, absent: []string{"-ctk/-ctv"}},
		{name: "the weights are counted: a cache that fits the bound alone is refused beside them",
			nCtx: big, slots: 1, types: f16, bound: big*perCell(f16) + w/2,
			want: []string{"the weights ("}},
		{name: "a context is counted padded to 256 cells as it is allocated",
			nCtx: 257, slots: 1, types: f16, bound: w + 511*perCell(f16),
			want: []string{"a KV cache of 257 tokens"}},
		{name: "weights alone over the bound are named as such",
			nCtx: 256, slots: 1, types: f16, bound: w / 2,
			want: []string{"the weights alone do not fit"}},
		{name: "a cgroup limit is named with its file",
			nCtx: big, slots: 1, types: f16, bound: w, file: "/sys/fs/cgroup/memory.max",
			want: []string{"the cgroup memory limit of", "(/sys/fs/cgroup/memory.max)"}},
		{name: "an unknown bound checks nothing",
			nCtx: 1 << 30, slots: 1 << 20, types: f16, bound: 0},
		{name: "zero slots are refused naming the count",
			nCtx: 256, slots: 0, types: f16, bound: 1 << 40, want: []string{"0 slots"}},
		{name: "a context size of 0 is refused naming the size and the range",
			nCtx: 0, slots: 1, types: f16, bound: 1 << 40, want: []string{"context size 0 outside [1, 1073741824]"}},
		{name: "caches whose bytes overflow 64 bits saturate and are refused",
			nCtx: 1 << 30, slots: 1 << 40, types: f16, bound: 1 << 62, want: []string{"1099511627776 slots"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := m.CheckMemory(tc.nCtx, tc.slots, tc.types, fakeBound(tc.bound, tc.file))
			if tc.want == nil {
				if err != nil {
					t.Fatalf("CheckMemory: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("CheckMemory allowed it; want an error with %q", tc.want)
			}
			t.Log(err)
			for _, s := range tc.want {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q lacks %q", err, s)
				}
			}
			for _, s := range tc.absent {
				if strings.Contains(err.Error(), s) {
					t.Errorf("error %q names %q", err, s)
				}
			}
		})
	}
}

// TestKVCacheBytesIsTheContextsAllocation: KVCacheBytes of one slot is what a context holds once its cache
// has grown to its full size, at every cache type, and slots multiply it.
func TestKVCacheBytesIsTheContextsAllocation(t *testing.T) {
	m := loadModel(t, tinyQ2(t))
	for _, tc := range []struct {
		name  string
		nCtx  int
		types CacheTypes
	}{
		{name: "an f16 cache of 300 tokens holds 512 cells", nCtx: 300},
		{name: "a q8_0 cache of 256 tokens holds 256 cells", nCtx: 256, types: CacheTypes{K: gguf.Q8_0, V: gguf.Q8_0}},
		{name: "a q4_0 K and f16 V cache of 600 tokens holds 768 cells", nCtx: 600, types: CacheTypes{K: gguf.Q4_0, V: gguf.F16}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := m.NewContextTypes(tc.nCtx, 1, tc.types)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			c.grow(tc.nCtx)
			if got, want := m.HP.KVCacheBytes(tc.nCtx, 1, tc.types), c.KVBytes(); got != want {
				t.Errorf("KVCacheBytes = %d; the full context holds %d", got, want)
			}
			if got, want := m.HP.KVCacheBytes(tc.nCtx, 3, tc.types), 3*c.KVBytes(); got != want {
				t.Errorf("KVCacheBytes of 3 slots = %d; want %d", got, want)
			}
		})
	}
}

// TestWeightBytesCountsWhatStaysResident: WeightBytes counts every tensor the graph reads from the file,
// vectors as their float32 copies, and a packed projection as its packed copy in place of its mapped pages
// (which stay counted when the file was read into memory).
func TestWeightBytesCountsWhatStaysResident(t *testing.T) {
	q2 := tinyQ2(t)
	for _, tc := range []struct {
		name   string
		path   string
		parsed bool // read into memory with gguf.Parse, not mapped
	}{
		{name: "an F32 model mapped from its file counts its tensors and its vectors' copies", path: filepath.Join(modelsDir(t), "stories260K.gguf")},
		{name: "a mapped Q2_0 model counts each packed projection's copy in place of its pages", path: q2},
		{name: "a Q2_0 model read into memory counts the packed copies beside the file's bytes", path: q2, parsed: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var f *gguf.File
			var err error
			if tc.parsed {
				data, err := os.ReadFile(tc.path)
				if err != nil {
					t.Fatal(err)
				}
				f, err = gguf.Parse(data)
				if err != nil {
					t.Fatal(err)
				}
			} else {
				f, err = gguf.Open(tc.path)
				if err != nil {
					t.Fatal(err)
				}
				defer f.Close()
			}
			m, err := Load(f)
			if err != nil {
				t.Fatal(err)
			}
			packed, err := m.WaitPacked()
			if err != nil {
				t.Fatal(err)
			}
			// By hand: vectors as float32, matrices whole, except a mapped projection that Load packed.
			want := uint64(packed)
			for i := range f.Tensors {
				ti := &f.Tensors[i]
				switch {
				case len(ti.Ne) == 1:
					want += 4 * uint64(ti.NElements())
				case ti.Name != "token_embd.weight" && m.Level != quant.LevelGeneric && quant.Packable(ti.Type) && !tc.parsed:
				default:
					want += uint64(len(f.TensorData(ti)))
				}
			}
			if got := m.WeightBytes(); got != want {
				t.Errorf("WeightBytes = %d; want %d (packed copies %d)", got, want, packed)
			}
			if strings.Contains(tc.name, "Q2_0") && m.Level != quant.LevelGeneric && packed == 0 {
				t.Error("nothing was packed: the case tests nothing")
			}
		})
	}
}

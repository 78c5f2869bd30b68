package guard

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bankml/bankml/gguf"
	"github.com/bankml/bankml/internal/testdata"
)

// check guards data as a whole file.
func check(tb testing.TB, data []byte, opt Options) *Report {
	tb.Helper()
	rep, err := Check(bytes.NewReader(data), int64(len(data)), opt)
	if err != nil {
		tb.Fatalf("Check: %v", err)
	}
	return rep
}

// raw returns the bytes a function writes.
func raw(f func(w *builder)) []byte {
	w := &builder{}
	f(w)
	return w.b
}

// mutate returns a copy of b changed by f.
func mutate(b []byte, f func(b []byte)) []byte {
	c := bytes.Clone(b)
	f(c)
	return c
}

// nested is an array of arrays nested depth deep around an empty array of u8.
func nested(depth int) kv {
	return kv{"deep", func(w *builder) {
		w.u32(uint32(gguf.TypeArray))
		for range depth - 1 {
			w.u32(uint32(gguf.TypeArray))
			w.u64(1)
		}
		w.u32(uint32(gguf.Uint8))
		w.u64(0)
	}}
}

// row is one generated file and the verdict it must get.
type row struct {
	name    string
	data    []byte
	engine  Engine
	file    string // the file name
	verdict Verdict
	reason  string // a substring of the reason; "" for play
}

// rows returns one generated file per trap and per hostile header (and a few controls that play). FuzzGuard
// starts from them too.
func rows() []row {
	q2 := func(name string, ne ...int64) ti { return tn(name, gguf.Q2_0, ne...) }
	legacy := func(name string, ne ...int64) ti { // group-128 bytes (34 per 128) filed under type 42
		x := q2(name, ne...)
		x.size = ne[0] * ne[1] / 128 * 34
		return x
	}
	v := valid()
	return []row{
		// Controls: the valid file, proper group-64 Q2_0, Q1_0 and the ternary types play on both engines.
		{"valid", v, Mainline, "tiny.gguf", Play, ""},
		{"valid-prism", v, Prism, "tiny.gguf", Play, ""},
		{"q2_0-g64", build(32, baseKVs(), []ti{q2("a", 256, 4), q2("b", 128, 2)}), Mainline, "", Play, ""},
		{"low-bit-types", build(32, baseKVs(), []ti{tn("a", gguf.Q1_0, 256, 2), tn("b", gguf.TQ1_0, 256), tn("c", gguf.TQ2_0, 256), tn("d", gguf.BF16, 3)}), Mainline, "", Play, ""},
		{"bonsai-8b-is-not-bonsai-2", build(32, with(kvStr("general.name", "Bonsai-8B")), baseTensors()), Mainline, "Bonsai-8B-Q1_0.gguf", Play, ""},
		{"pad-id-none", build(32, with(kvU32("tokenizer.ggml.padding_token_id", math.MaxUint32)), baseTensors()), Mainline, "", Play, ""},

		// Trap 1: fork-only types.
		{"fork-pq2_0-mainline", build(32, baseKVs(), []ti{tn("a", PQ2_0, 256, 2)}), Mainline, "", Refuse, "PQ2_0 (142) are PrismML-fork types"},
		{"fork-ptq1_0-mainline", build(32, baseKVs(), []ti{tn("a", PTQ1_0, 128, 3)}), Mainline, "", Refuse, "PTQ1_0 (143) are PrismML-fork types"},
		{"fork-both-mainline", build(32, baseKVs(), []ti{tn("a", PQ2_0, 256), tn("b", PTQ1_0, 128)}), Mainline, "", Refuse, "PQ2_0 (142), PTQ1_0 (143)"},
		{"fork-pq2_0-prism", build(32, baseKVs(), []ti{tn("a", PQ2_0, 256, 2)}), Prism, "", Play, ""},
		{"fork-ptq1_0-prism", build(32, baseKVs(), []ti{tn("a", PTQ1_0, 128, 3), tn("b", gguf.F32, 8)}), Prism, "", Play, ""},
		{"fork-pq2_0-prism-short", build(32, baseKVs(), []ti{{"a", uint32(PQ2_0), []int64{256, 2}, 60, -1}}), Prism, "", Refuse, "runs past the end"},

		// Trap 2: legacy group-128 Q2_0 under type 42, on both engines.
		{"legacy-q2_0", build(32, baseKVs(), []ti{legacy("blk.0.ffn_up.weight", 256, 8), legacy("blk.0.ffn_down.weight", 256, 8), tn("norm", gguf.F32, 256)}), Mainline, "", Refuse, "2 Q2_0 tensors (the first \"blk.0.ffn_up.weight\") span fewer bytes than the group-64 layout needs"},
		{"legacy-q2_0-last", build(32, baseKVs(), []ti{tn("norm", gguf.F32, 256), legacy("output.weight", 1024, 4)}), Mainline, "", Refuse, "legacy group-128 Prism file"},
		{"legacy-q2_0-prism", build(32, baseKVs(), []ti{legacy("w", 256, 8), tn("norm", gguf.F32, 256)}), Prism, "", Refuse, "legacy group-128 Prism file"},

		// Trap 3: Bonsai 2 by name, on mainline only.
		{"bonsai2-general.name", build(32, with(kvStr("general.name", "Ternary-Bonsai-2-8B")), baseTensors()), Mainline, "", Refuse, "Bonsai 2 weights (\"Ternary-Bonsai-2-8B\") are in a rotated basis"},
		{"bonsai2-basename", build(32, with(kvStr("general.basename", "bonsai_2")), baseTensors()), Mainline, "", Refuse, "rotated basis"},
		{"bonsai2-file-name", v, Mainline, "BONSAI 2 27B-Q2_0.gguf", Refuse, "rotated basis"},
		{"bonsai2-prism-fork-required", build(32, with(kvStr("general.name", "x (Prism-Fork-Required)")), baseTensors()), Mainline, "", Refuse, "rotated basis"},
		{"bonsai2-prism", build(32, with(kvStr("general.name", "Bonsai-2-27B")), baseTensors()), Prism, "Bonsai-2-27B-PQ2_0.gguf", Play, ""},

		// Hostile headers.
		{"bad-magic", mutate(v, func(b []byte) { copy(b, "GGML") }), Mainline, "", Refuse, `bad magic "GGML"`},
		{"bad-magic-short", []byte("GG\x00"), Mainline, "", Refuse, "bad magic"},
		{"version-1", mutate(v, func(b []byte) { binary.LittleEndian.PutUint32(b[4:], 1) }), Mainline, "", Refuse, "unsupported GGUF version 1"},
		{"version-4", mutate(v, func(b []byte) { binary.LittleEndian.PutUint32(b[4:], 4) }), Mainline, "", Refuse, "unsupported GGUF version 4"},
		{"big-endian", mutate(v, func(b []byte) { binary.BigEndian.PutUint32(b[4:], 3) }), Mainline, "", Refuse, "big-endian file"},
		{"empty-key", build(32, with(kvU32("", 1)), baseTensors()), Mainline, "", Refuse, "has an empty key"},
		{"duplicate-key", build(32, append(baseKVs(), kvStr("general.name", "again")), baseTensors()), Mainline, "", Refuse, `duplicate metadata key "general.name"`},
		{"unknown-value-type", build(32, with(kv{"k", func(w *builder) { w.u32(13); w.u64(0) }}), baseTensors()), Mainline, "", Refuse, "unknown value type id 13"},
		{"unknown-array-element-type", build(32, with(kv{"k", func(w *builder) { w.u32(uint32(gguf.TypeArray)); w.u32(99); w.u64(0) }}), baseTensors()), Mainline, "", Refuse, `key "k" array: unknown element type id 99`},
		{"arrays-nested-65", build(32, with(nested(65)), baseTensors()), Mainline, "", Refuse, "arrays nested more than 64 deep"},
		{"arrays-nested-64", build(32, with(nested(64)), baseTensors()), Mainline, "", Play, ""},
		{"metadata-count-cannot-fit", mutate(v, func(b []byte) { binary.LittleEndian.PutUint64(b[16:], 1<<40) }), Mainline, "", Refuse, "metadata count 1099511627776 at offset 24 cannot fit in the file"},
		{"tensor-count-cannot-fit", mutate(v, func(b []byte) { binary.LittleEndian.PutUint64(b[8:], math.MaxUint64) }), Mainline, "", Refuse, "tensor count 18446744073709551615 at offset 24 cannot fit in the file"},
		{"array-count-cannot-fit", build(32, with(kv{"k", func(w *builder) { w.u32(uint32(gguf.TypeArray)); w.u32(uint32(gguf.Uint64)); w.u64(1 << 29) }}), baseTensors()), Mainline, "", Refuse, `key "k" array at offset 712 cannot fit in the file: 536870912 items of at least 8 bytes`},
		{"array-count-over-limit", build(32, with(kv{"k", func(w *builder) { w.u32(uint32(gguf.TypeArray)); w.u32(uint32(gguf.String)); w.u64(1 << 31) }}), baseTensors()), Mainline, "", Refuse, `key "k" array: length 2147483648 at offset`},
		{"string-length-cannot-fit", build(32, with(kv{"k", func(w *builder) { w.u32(uint32(gguf.String)); w.u64(100 << 20) }}), baseTensors()), Mainline, "", Refuse, "cannot fit in the file"},
		{"string-length-over-limit", build(32, with(kv{"k", func(w *builder) { w.u32(uint32(gguf.String)); w.u64(1 << 40) }}), baseTensors()), Mainline, "", Refuse, "length 1099511627776 at offset"},
		{"key-length-cannot-fit", mutate(v, func(b []byte) { binary.LittleEndian.PutUint64(b[24:], 1<<62) }), Mainline, "", Refuse, "metadata 0 key length 4611686018427387904"},
		{"empty-tensor-name", build(32, baseKVs(), []ti{tn("", gguf.F32, 4)}), Mainline, "", Refuse, "tensor 0 has an empty name"},
		{"duplicate-tensor-name", build(32, baseKVs(), []ti{tn("a", gguf.F32, 4), tn("a", gguf.F32, 4)}), Mainline, "", Refuse, `duplicate tensor name "a" (tensors 0 and 1)`},
		{"tensor-name-64-bytes", build(32, baseKVs(), []ti{tn(strings.Repeat("n", 64), gguf.F32, 4)}), Mainline, "", Refuse, "name of 64 bytes"},
		{"five-dimensions", build(32, baseKVs(), []ti{tn("a", gguf.F32, 1, 1, 1, 1, 1)}), Mainline, "", Refuse, `tensor "a" has 5 dimensions, at most 4`},
		{"zero-dimension", build(32, baseKVs(), []ti{tn("a", gguf.F32, 4, 0)}), Mainline, "", Refuse, `tensor "a": dimension 1 is 0`},
		{"negative-dimension", build(32, baseKVs(), []ti{{"a", uint32(gguf.F32), []int64{-4}, 16, -1}}), Mainline, "", Refuse, `tensor "a": dimension 0 is -4`},
		{"element-count-overflow", build(32, baseKVs(), []ti{{"a", uint32(gguf.F32), []int64{1 << 32, 1 << 31}, 16, -1}}), Mainline, "", Refuse, "element count of shape [4294967296 2147483648] overflows 63 bits"},
		{"byte-size-overflow", build(32, baseKVs(), []ti{{"a", uint32(gguf.F32), []int64{1 << 31, 1 << 31}, 16, -1}}), Mainline, "", Refuse, "byte size of 4611686018427387904 F32 elements overflows 63 bits"},
		{"alignment-zero", build(32, with(kvU32(gguf.KeyAlignment, 0)), baseTensors()), Mainline, "", Refuse, "bad alignment: general.alignment = 0"},
		{"alignment-not-power-of-two", build(48, with(kvU32(gguf.KeyAlignment, 48)), baseTensors()), Mainline, "", Refuse, "48 is not a nonzero power of two"},
		{"alignment-wrong-type", build(32, with(kvU64(gguf.KeyAlignment, 32)), baseTensors()), Mainline, "", Refuse, "general.alignment is u64, want u32"},
		{"alignment-64", build(64, with(kvU32(gguf.KeyAlignment, 64)), baseTensors()), Mainline, "", Play, ""},
		{"offset-misaligned", build(32, baseKVs(), []ti{tn("a", gguf.F32, 4), {"b", uint32(gguf.F32), []int64{4}, 16, 48}}), Mainline, "", Refuse, `tensor "b": offset 48 is not a multiple of the alignment 32`},
		{"offsets-overlap", build(32, baseKVs(), []ti{tn("a", gguf.F32, 64), {"b", uint32(gguf.F32), []int64{4}, 16, 128}}), Mainline, "", Refuse, `tensors "a" and "b" overlap`},
		{"offset-past-end", build(32, baseKVs(), []ti{tn("a", gguf.F32, 4), {"b", uint32(gguf.F32), []int64{4}, 16, 1 << 20}}), Mainline, "", Refuse, `tensor "b" runs past the end of the file`},
		{"data-cut-short", build(32, baseKVs(), []ti{{"a", uint32(gguf.F32), []int64{256}, 1000, -1}}), Mainline, "", Refuse, `tensor "a" runs past the end of the file: 1024 bytes at offset 0`},
		{"offsets-not-packed", append(build(32, baseKVs(), []ti{tn("a", gguf.F32, 4), {"b", uint32(gguf.F32), []int64{4}, 16, 64}}), make([]byte, 64)...), Mainline, "", Refuse, `tensor "b": offset 64, expected 32`},
		{"data-section-past-end", raw(func(w *builder) { w.header(3, 1, 0); w.tensorInfo("a", 0, 0, 1) }), Mainline, "", Refuse, "the data section starts at byte 64"},
		{"row-not-whole-blocks", build(32, baseKVs(), []ti{{"a", uint32(gguf.Q8_0), []int64{33}, 34, -1}}), Mainline, "", Refuse, `tensor "a": Q8_0 rows of 33 elements are not a whole number of 32-element blocks`},
		{"unknown-type-43", build(32, baseKVs(), []ti{{"a", 43, []int64{4}, 16, -1}}), Mainline, "", Refuse, "tensor type ids 43 are unknown"},
		{"unknown-type-200", build(32, baseKVs(), []ti{{"a", 200, []int64{4}, 16, -1}, {"b", 4000000000, []int64{4}, 16, -1}}), Prism, "", Refuse, "tensor type ids 200, 4000000000 are unknown"},
		{"removed-type-q4_2", build(32, baseKVs(), []ti{{"a", 4, []int64{32}, 20, -1}}), Mainline, "", Refuse, "tensor types Q4_2 (4) were removed from ggml"},
		{"removed-type-q4_0_4_4", build(32, baseKVs(), []ti{{"a", 31, []int64{32}, 18, -1}}), Prism, "", Refuse, "Q4_0_4_4 (31) were removed"},
		{"tokens-wrong-element-type", build(32, with(kvArr("tokenizer.ggml.tokens", gguf.Int32, 3)), baseTensors()), Mainline, "", Refuse, "tokenizer.ggml.tokens is an array of i32, want an array of str"},
		{"tokens-not-an-array", build(32, with(kvStr("tokenizer.ggml.tokens", "abc")), baseTensors()), Mainline, "", Refuse, "tokenizer.ggml.tokens is str, want an array of str"},
		{"scores-wrong-element-type", build(32, with(kvStrs("tokenizer.ggml.scores", "a", "b", "c")), baseTensors()), Mainline, "", Refuse, "tokenizer.ggml.scores is an array of str, want an array of f32 or i32"},
		{"token-type-wrong-element-type", build(32, with(kvArr("tokenizer.ggml.token_type", gguf.Float32, 3)), baseTensors()), Mainline, "", Refuse, "tokenizer.ggml.token_type is an array of f32, want an array of i32"},
		{"merges-wrong-element-type", build(32, with(kvArr("tokenizer.ggml.merges", gguf.Uint8, 2)), baseTensors()), Mainline, "", Refuse, "tokenizer.ggml.merges is an array of u8, want an array of str"},
		{"scores-short", build(32, with(kvArr("tokenizer.ggml.scores", gguf.Float32, 2)), baseTensors()), Mainline, "", Refuse, "tokenizer.ggml.scores has 2 entries for 3 tokens"},
		{"bos-outside-vocab", build(32, with(kvU32("tokenizer.ggml.bos_token_id", 3)), baseTensors()), Mainline, "", Refuse, "tokenizer.ggml.bos_token_id 3 is outside the vocabulary of 3 tokens"},
		{"eos-outside-vocab", build(32, with(kvU32("tokenizer.ggml.eos_token_id", 70000)), baseTensors()), Mainline, "", Refuse, "tokenizer.ggml.eos_token_id 70000 is outside the vocabulary"},
		{"unk-outside-vocab", build(32, with(kvU32("tokenizer.ggml.unknown_token_id", 5)), baseTensors()), Mainline, "", Refuse, "tokenizer.ggml.unknown_token_id 5 is outside"},
		{"pad-outside-vocab", build(32, with(kvU32("tokenizer.ggml.padding_token_id", 0xFFFFFFFE)), baseTensors()), Mainline, "", Refuse, "tokenizer.ggml.padding_token_id 4294967294 is outside"},
		{"bos-wrong-type", build(32, with(kvI32("tokenizer.ggml.bos_token_id", -1)), baseTensors()), Mainline, "", Refuse, "tokenizer.ggml.bos_token_id is i32, want u32"},

		// A header cut short needs more bytes.
		{"truncated-header", v[:100], Mainline, "", NeedMore, "header truncated"},
		{"empty-file", nil, Mainline, "", NeedMore, "header truncated: magic"},
	}
}

// TestTrapsAndHostileHeaders: one generated file per trap and per hostile header, each refused with the right
// reason (or, for the controls, played); the fork types and the Bonsai 2 names play on the prism engine.
func TestTrapsAndHostileHeaders(t *testing.T) {
	seen := map[string]bool{}
	for _, tc := range rows() {
		t.Run(tc.name, func(t *testing.T) {
			if seen[tc.name] {
				t.Fatal("duplicate row")
			}
			seen[tc.name] = true
			rep := check(t, tc.data, Options{Engine: tc.engine, FileName: tc.file})
			if rep.Verdict != tc.verdict || !strings.Contains(rep.Reason, tc.reason) {
				t.Fatalf("%s: %s %q; want %s with %q", tc.engine, rep.Verdict, rep.Reason, tc.verdict, tc.reason)
			}
			if (rep.Verdict == Play) != (len(rep.Reasons) == 0) || rep.Reason != strings.Join(rep.Reasons, "; ") {
				t.Fatalf("reasons %q, reason %q", rep.Reasons, rep.Reason)
			}
			// What plays on mainline is what package gguf (the reference's acceptance rules) accepts.
			if rep.Verdict == Play && tc.engine == Mainline {
				if _, err := gguf.Parse(tc.data); err != nil {
					t.Fatalf("plays but gguf.Parse fails: %v", err)
				}
			}
		})
	}
}

// TestNeedMoreSaysHowManyBytes: a header cut anywhere gives need_more with a bytes_needed past the cut; reading that
// many bytes and asking again converges to play, reading the header only.
func TestNeedMoreSaysHowManyBytes(t *testing.T) {
	data, err := os.ReadFile(testdata.Model(t, "stories260K.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	full := check(t, data, Options{})
	if full.Verdict != Play {
		t.Fatalf("%+v", full)
	}
	for _, cut := range []int{0, 3, 4, 10, 23, 24, 100, 1000, 5000, 14151} { // the tensor infos end at 14152

		rep := check(t, data[:cut], Options{})
		if rep.Verdict != NeedMore || rep.BytesNeeded <= uint64(cut) || rep.BytesMissing != rep.BytesNeeded-uint64(cut) ||
			rep.BytesNeeded > full.DataOffset {
			t.Errorf("cut %d: %s needed %d missing %d (%s)", cut, rep.Verdict, rep.BytesNeeded, rep.BytesMissing, rep.Reason)
		}
		if !errors.Is(rep.Err(), ErrNeedMore) {
			t.Errorf("cut %d: Err %v", cut, rep.Err())
		}
	}
	// A prefix of the file, its full size declared: ask for bytes_needed until the verdict comes.
	have, rounds := 0, 0
	for ; ; rounds++ {
		rep, err := Check(bytes.NewReader(data[:have]), int64(len(data)), Options{})
		if err != nil {
			t.Fatal(err)
		}
		if rep.Verdict != NeedMore {
			if rep.Verdict != Play || rep.DataOffset != full.DataOffset {
				t.Fatalf("after %d rounds with %d bytes: %+v", rounds, have, rep)
			}
			break
		}
		if rep.BytesNeeded <= uint64(have) || rep.BytesNeeded > full.DataOffset || rounds > 40 {
			t.Fatalf("round %d: have %d, needed %d", rounds, have, rep.BytesNeeded)
		}
		have = int(rep.BytesNeeded)
	}
	t.Logf("stories260K: play after %d rounds of need_more, reading %d of %d header bytes", rounds, have, full.DataOffset)
}

// guardedReader fails any read that reaches past limit, and records the furthest byte read.
type guardedReader struct {
	r     io.ReaderAt
	limit int64
	max   int64
}

func (g *guardedReader) ReadAt(p []byte, off int64) (int, error) {
	if off+int64(len(p)) > g.limit {
		return 0, fmt.Errorf("read of bytes %d to %d: past the header, which ends at %d", off, off+int64(len(p)), g.limit)
	}
	g.max = max(g.max, off+int64(len(p)))
	return g.r.ReadAt(p, off)
}

// models returns every .gguf file under the shared models folder.
func models(tb testing.TB) []string {
	var out []string
	err := filepath.WalkDir(testdata.ModelsDir(tb), func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".gguf") {
			out = append(out, p)
		}
		return err
	})
	if err != nil || len(out) == 0 {
		tb.Fatalf("models: %v, %d files", err, len(out))
	}
	return out
}

// TestEverySharedModelPlaysFromItsHeaderAlone: every .gguf in the shared models plays on both engines, with the
// types and offsets package gguf reads; the guard reads no byte past the header: a reader that fails past the end
// of the tensor infos gives the same report, and so does one whose data region is absent.
func TestEverySharedModelPlaysFromItsHeaderAlone(t *testing.T) {
	for _, p := range models(t) {
		name, _ := filepath.Rel(testdata.ModelsDir(t), p)
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			g, err := gguf.Parse(data)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range []Engine{Mainline, Prism} {
				rep, err := File(p, Options{Engine: e})
				if err != nil || rep.Verdict != Play || rep.Engine != e {
					t.Fatalf("%s: %+v, %v", e, rep, err)
				}
				types := map[string]int{}
				for _, ti := range g.Tensors {
					types[TypeName(ti.Type)]++
				}
				if rep.Tensors != len(g.Tensors) || fmt.Sprint(rep.Types) != fmt.Sprint(types) ||
					rep.DataOffset != g.DataOffset || rep.FileSize != uint64(len(data)) ||
					rep.Arch != g.Architecture() || rep.GGUFVersion != g.Version {
					t.Fatalf("report %+v disagrees with gguf.Parse", rep)
				}
			}
			// No byte past the tensor infos is read (neither the padding nor the data region): a reader that fails
			// there gives the same report, and so does one that holds the header only.
			end := headerEnd(t, data, g)
			gr := &guardedReader{r: bytes.NewReader(data), limit: end}
			rep, err := Check(gr, int64(len(data)), Options{})
			if err != nil || rep.Verdict != Play {
				t.Fatalf("guarded: %+v, %v", rep, err)
			}
			absent, err := Check(bytes.NewReader(data[:end]), int64(len(data)), Options{})
			if err != nil || absent.Verdict != Play || jsonOf(t, absent) != jsonOf(t, rep) {
				t.Fatalf("data absent: %+v, %v", absent, err)
			}
			t.Logf("%s: %d tensors, header %d bytes, read %d bytes of %d", rep.Arch, rep.Tensors, rep.DataOffset, gr.max, len(data))
		})
	}
}

// TestIOErrorsAreErrorsNotVerdicts: a reader that fails (other than io.EOF) gives an error and no report; a missing
// file too; bad options are errors.
func TestIOErrorsAreErrorsNotVerdicts(t *testing.T) {
	boom := errors.New("boom")
	if rep, err := Check(failReader{boom}, 1000, Options{}); !errors.Is(err, boom) || rep != nil {
		t.Errorf("failing reader: %v, %v", rep, err)
	}
	if _, err := File(filepath.Join(t.TempDir(), "absent.gguf"), Options{}); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
	if _, err := File(t.TempDir(), Options{}); err == nil {
		t.Error("a directory is not an error")
	}
	if _, err := Check(bytes.NewReader(valid()), 10, Options{Engine: "vulkan"}); err == nil || !strings.Contains(err.Error(), `unknown engine "vulkan"`) {
		t.Errorf("bad engine: %v", err)
	}
	if _, err := Check(bytes.NewReader(nil), -1, Options{}); err == nil {
		t.Error("negative size accepted")
	}
}

// headerEnd returns where the tensor infos of a parsed file end: the first info's encoding is found in the file,
// and the infos' encoded lengths added to it.
func headerEnd(tb testing.TB, data []byte, g *gguf.File) int64 {
	tb.Helper()
	if len(g.Tensors) == 0 {
		return int64(g.DataOffset)
	}
	var infos []byte
	for _, ti := range g.Tensors {
		w := &builder{}
		w.tensorInfo(ti.Name, uint32(ti.Type), ti.Offset, ti.Ne...)
		infos = append(infos, w.b...)
	}
	start := bytes.Index(data[:g.DataOffset], infos)
	if start < 0 {
		tb.Fatal("tensor infos not found")
	}
	return int64(start + len(infos))
}

func jsonOf(tb testing.TB, v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		tb.Fatal(err)
	}
	return string(b)
}

type failReader struct{ err error }

func (f failReader) ReadAt([]byte, int64) (int, error) { return 0, f.err }

// TestMaxHeaderBoundsWhatIsRead: a header larger than MaxHeader is refused as one that cannot fit, not read.
func TestMaxHeaderBoundsWhatIsRead(t *testing.T) {
	v := valid()
	rep := check(t, v, Options{MaxHeader: 100})
	if rep.Verdict != Refuse || !strings.Contains(rep.Reason, "over the guard's header limit of 100 bytes") {
		t.Fatalf("%+v", rep)
	}
	if rep := check(t, v, Options{MaxHeader: int64(len(v))}); rep.Verdict != Play {
		t.Fatalf("%+v", rep)
	}
}

// TestReportJSON: --json's object has the original guard's field names, plus reason, file_size and data_offset;
// need_more adds bytes_needed and bytes_missing.
func TestReportJSON(t *testing.T) {
	rep := check(t, build(32, with(kvStr("general.name", "Bonsai-2-8B")), []ti{tn("a", PQ2_0, 256), tn("b", gguf.F32, 4)}), Options{FileName: "b.gguf"})
	b, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"verdict": "refuse", "engine": "mainline", "gguf_version": 3.0, "arch": "llama",
		"name": "Bonsai-2-8B", "tensors": 2.0, "file_size": float64(rep.FileSize), "data_offset": float64(rep.DataOffset),
		"kv_f16_bytes_per_token": 2 * 2 * 128.0 * 2}
	for k, w := range want {
		if m[k] != w {
			t.Errorf("%s = %v, want %v", k, m[k], w)
		}
	}
	if fmt.Sprint(m["types"]) != "map[F32:1 PQ2_0:1]" || len(m["reasons"].([]any)) != 2 || m["reason"] != rep.Reason {
		t.Errorf("types %v, reasons %v, reason %v", m["types"], m["reasons"], m["reason"])
	}
	if _, ok := m["bytes_needed"]; ok {
		t.Error("bytes_needed on a refusal")
	}
	if !errors.Is(rep.Err(), ErrRefused) || !strings.Contains(rep.Err().Error(), "refused on mainline: tensor types PQ2_0") {
		t.Errorf("Err: %v", rep.Err())
	}
	nm, _ := json.Marshal(check(t, valid()[:50], Options{}))
	if !strings.Contains(string(nm), `"verdict":"need_more"`) || !strings.Contains(string(nm), `"bytes_needed":`) ||
		!strings.Contains(string(nm), `"bytes_missing":`) {
		t.Errorf("need_more JSON: %s", nm)
	}
}

// TestTypeNames: ggml's names upper-cased, removed ids by their former name, the fork's types, numbers otherwise.
func TestTypeNames(t *testing.T) {
	for id, want := range map[gguf.GGMLType]string{
		gguf.F32: "F32", gguf.Q4_K: "Q4_K", gguf.IQ2_XXS: "IQ2_XXS", gguf.Q1_0: "Q1_0", gguf.Q2_0: "Q2_0", 4: "Q4_2",
		36: "IQ4_NL_4_4", 43: "43", PQ2_0: "PQ2_0", PTQ1_0: "PTQ1_0", 144: "144",
	} {
		if got := TypeName(id); got != want {
			t.Errorf("%d: %s, want %s", id, got, want)
		}
	}
}

// BenchmarkGuard guards the largest shared file, a 4 MB header of 100,000 tokens and merges.
func BenchmarkGuard(b *testing.B) {
	p := testdata.Model(b, "vocab/ggml-vocab-deepseek-llm.gguf")
	for b.Loop() {
		if rep, err := File(p, Options{}); err != nil || rep.Verdict != Play {
			b.Fatal(rep, err)
		}
	}
}

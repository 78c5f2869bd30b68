package ucd

import (
	"errors"
	"testing"

	"github.com/bankml/bankml/internal/reference"
	"github.com/bankml/bankml/internal/testdata"
)

func loadUnicode(t *testing.T) *reference.Unicode {
	t.Helper()
	lib, err := reference.Load()
	if err != nil {
		if errors.Is(err, reference.ErrNotInstalled) {
			testdata.Absent(t, "reference not installed: %v", err)
		}
		testdata.Absent(t, "reference unavailable: %v", err)
	}
	u, err := lib.Unicode()
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// TestFlagsMatchReferenceForEveryCodePoint compares Of with the reference's unicode_cpt_flags_from_cpt for every
// code point 0..0x10FFFF and a few values beyond.
func TestFlagsMatchReferenceForEveryCodePoint(t *testing.T) {
	u := loadUnicode(t)
	same, n := 0, 0
	for c := uint32(0); c < MaxCodepoints+16; c++ {
		n++
		want := Flags(u.CptFlags(c))
		if got := Of(c); got != want {
			if n-same <= 10 {
				t.Errorf("U+%04X: flags %#04x, reference %#04x", c, got, want)
			}
			continue
		}
		same++
	}
	for _, c := range []uint32{0x1FFFFF, 0xFFFFFFFF} {
		n++
		if got, want := Of(c), Flags(u.CptFlags(c)); got == want {
			same++
		} else {
			t.Errorf("%#x: flags %#04x, reference %#04x", c, got, want)
		}
	}
	t.Logf("unicode_cpt_flags_from_cpt: %d of %d code points identical", same, n)
}

// TestToLowerMatchesReferenceForEveryCodePoint compares ToLower with unicode_tolower for every code point.
func TestToLowerMatchesReferenceForEveryCodePoint(t *testing.T) {
	u := loadUnicode(t)
	same, n := 0, 0
	for c := uint32(0); c < MaxCodepoints+16; c++ {
		n++
		if got, want := ToLower(c), u.ToLower(c); got != want {
			if n-same <= 10 {
				t.Errorf("U+%04X: lower U+%04X, reference U+%04X", c, got, want)
			}
			continue
		}
		same++
	}
	t.Logf("unicode_tolower: %d of %d code points identical", same, n)
}

// TestNFDMatchesReferenceForEveryCodePoint compares NFD with unicode_cpts_normalize_nfd over all code points.
func TestNFDMatchesReferenceForEveryCodePoint(t *testing.T) {
	u := loadUnicode(t)
	cpts := make([]uint32, MaxCodepoints)
	for i := range cpts {
		cpts[i] = uint32(i)
	}
	want := u.NormalizeNFD(cpts)
	if len(want) != len(cpts) {
		t.Fatalf("reference returned %d code points for %d", len(want), len(cpts))
	}
	same := 0
	for i, c := range cpts {
		if got := NFD(c); got != want[i] {
			if i-same <= 10 {
				t.Errorf("U+%04X: NFD U+%04X, reference U+%04X", c, got, want[i])
			}
			continue
		}
		same++
	}
	t.Logf("unicode_cpts_normalize_nfd: %d of %d code points identical", same, len(cpts))
}

// TestUTF8RoundTripsWhatLlamaCppDecodes checks DecodeUTF8 and AppendUTF8 on the forms unicode.cpp treats
// specially: overlong forms and surrogates decode to their bits, truncated and stray bytes become U+FFFD one byte
// at a time, and values above U+10FFFF cannot be encoded.
func TestUTF8RoundTripsWhatLlamaCppDecodes(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []uint32
	}{
		{"a\u00e9\u4e2d\U0001F999", []uint32{'a', 0xE9, 0x4E2D, 0x1F999}},
		{"\xc0\xaf", []uint32{'/'}},            // overlong '/'
		{"\xed\xa0\x80", []uint32{0xD800}},     // surrogate
		{"\xe4\xbd", []uint32{0xFFFD, 0xFFFD}}, // truncated
		{"\x80a", []uint32{0xFFFD, 'a'}},       // stray continuation
		{"\xf8\x88\x80\x80", []uint32{0xFFFD, 0xFFFD, 0xFFFD, 0xFFFD}},
		{"\xf5\x80\x80\x80", []uint32{0x140000}}, // above U+10FFFF
	} {
		got := DecodeUTF8(c.in, nil)
		if len(got) != len(c.want) {
			t.Errorf("%q: %x, want %x", c.in, got, c.want)
			continue
		}
		for i := range got {
			if got[i] != c.want[i] {
				t.Errorf("%q: %x, want %x", c.in, got, c.want)
				break
			}
		}
	}
	if _, ok := AppendUTF8(nil, 0x110000); ok {
		t.Error("AppendUTF8(0x110000) succeeded")
	}
	if b, ok := AppendUTF8(nil, 0xD800); !ok || string(b) != "\xed\xa0\x80" {
		t.Errorf("AppendUTF8(0xD800) = %q, %v", b, ok)
	}
}

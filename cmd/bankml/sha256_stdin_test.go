package main

import "testing"

// TestSHA256ReadsStandardInputForADash: FILE - is standard input, as sha256sum reads it (it was opened as a
// file named "-"), printed as "-" beside files given by name.
func TestSHA256ReadsStandardInputForADash(t *testing.T) {
	t.Chdir(t.TempDir())
	for _, tc := range []struct {
		name  string
		stdin string
		args  []string
		code  int
		want  string
	}{
		{name: "sha256 of - hashes standard input", stdin: "hello", args: []string{"sha256", "-"},
			want: "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824  -\n"},
		{name: "sha256 of - with empty standard input is the empty hash", args: []string{"sha256", "-"},
			want: "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855  -\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runCLIInput(tc.stdin, tc.args...)
			if code != tc.code || stdout != tc.want {
				t.Errorf("exit %d, stdout %q, stderr %q; want exit %d and %q", code, stdout, stderr, tc.code, tc.want)
			}
		})
	}
}

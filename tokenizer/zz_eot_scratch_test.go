package tokenizer
import ("testing";"os";"fmt")
func TestPrintEOT(t *testing.T) {
	for _, p := range os.Args[len(os.Args)-1:] { _ = p }
	path := os.Getenv("EOTFILES")
	for _, f := range splitList(path) {
		s := loadGGUFTokenizer(t, f)
		a,b,c,d,e,g := s.FIM()
		fmt.Printf("%s eot=%d eom=%d fim=%d,%d,%d,%d,%d,%d eog=%v\n", f, s.EOT(), s.EOM(), a,b,c,d,e,g, s.EOGs())
	}
}
func splitList(x string) []string { var out []string; cur := ""; for _, c := range x { if c == ',' { out = append(out, cur); cur = "" } else { cur += string(c) } }; if cur != "" { out = append(out, cur) }; return out }

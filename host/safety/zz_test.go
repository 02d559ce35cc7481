package safety
import ("testing";"fmt";"time";"strings";"regexp")
func TestZZ(t *testing.T){
 for _, s := range []string{strings.Repeat("(", 5000), strings.Repeat("a ", 3000), injectionPasted} {
  for name, re := range map[string]*regexp.Regexp{"leadIn":leadIn,"leadInDot":leadInDot,"hereIs":hereIs,"trailing":trailing,"zh":zhLeadIn,"reveal":revealSecret,"send":sendToURL,"net":netCommand, "longQuote": longQuote, "tag": tagBlock} {
   st:=time.Now(); re.FindStringIndex(s); fmt.Println(len(s), name, time.Since(st))
  }
  st:=time.Now(); CheckMemory(s); fmt.Println("checkmem", time.Since(st))
  st=time.Now(); CheckSkill(s); fmt.Println("checkskill", time.Since(st))
 }
}

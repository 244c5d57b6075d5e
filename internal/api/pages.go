package api

import (
	"crypto/sha256"
	"encoding/base64"
	"html/template"
	"net/http"
	"regexp"
	"strings"
	"sync"
)

// The few pages the TCP listener shows a browser before the web UI: signing in, and
// errors. They run no script and load nothing: their look (the web UI's) is a style
// sheet in the page, which their CSP names by its hash, and their logo is inline SVG.
// Each is parsed when first shown, not when the program starts: every CLI command would
// pay for it.
var (
	loginPage = page("login", pageHead+`
<h1>Sign in to paddock</h1>
<p>This browser will be able to see and control your sandboxes for 30 days, or until <code>paddock web --stop</code>.</p>
<form method="post" action="/login"><input type="hidden" name="code" value="{{.}}"><button type="submit">Sign in</button></form>
`+pageFoot)

	signedInPage = page("signed-in", pageHead+`
<h1>paddock</h1>
<p>This browser is signed in. There is no web UI here yet: the API is under <a href="/v1/sandboxes">/v1/</a>.</p>
<form method="post" action="/logout"><button type="submit">Sign out</button></form>
`+pageFoot)

	githubLoginPage = page("github-login", pageHead+`
<h1>Sign in to paddock</h1>
<p>This server lets the members of the GitHub organization <b>{{.}}</b> sign in.</p>
<a class="button" href="/auth/github">Sign in with GitHub</a>
`+pageFoot)

	signedInAsPage = page("signed-in-as", strings.Replace(pageHead, "<title>", `<meta http-equiv="refresh" content="0; url=/"><title>`, 1)+`
<h1>paddock</h1>
<p>Signed in as {{.}}.</p>
<a class="button" href="/">Continue</a>
`+pageFoot)

	errorPage = page("error", pageHead+`
<h1>paddock</h1>
<p>{{code .Message}}</p>{{if .Hint}}
<p class="hint">{{code .Hint}}</p>{{end}}{{if .GitHub}}
<a class="button" href="/auth/github">Sign in with GitHub</a>{{end}}
`+pageFoot)
)

// pageStyle is the pages' look: the web UI's colours and type, one card, and buttons a
// finger can hit (48 px tall).
const pageStyle = `:root{color-scheme:light dark;--bg:#f4f5f4;--card:#fff;--fg:#1b1f1e;--muted:#5d6663;--line:#dde2df;--accent:#1f6f5c;--accent-fg:#fff}
@media (prefers-color-scheme:dark){:root{--bg:#0f1211;--card:#1a1f1d;--fg:#e7ecea;--muted:#9aa5a1;--line:#2c3431;--accent:#3fae8f;--accent-fg:#06130f}}
*{box-sizing:border-box}
body{margin:0;padding:16px;background:var(--bg);color:var(--fg);font:16px/1.45 system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;overflow-wrap:anywhere}
main{max-width:28rem;margin:8vh auto 0;padding:20px;background:var(--card);border:1px solid var(--line);border-radius:12px}
h1{display:flex;align-items:center;gap:10px;margin:0 0 14px;font-size:1.3rem}
h1 svg{flex:none;width:32px;height:32px}
p{margin:0 0 12px}
.hint{color:var(--muted)}
a{color:var(--accent)}
code{font-family:ui-monospace,'SF Mono',Menlo,'DejaVu Sans Mono',Consolas,monospace;font-size:.88em;padding:1px 5px;border:1px solid var(--line);border-radius:5px;background:var(--bg);white-space:nowrap}
form{margin:0}
button,.button{display:flex;align-items:center;justify-content:center;width:100%;min-height:48px;margin-top:18px;padding:10px 16px;border:1px solid var(--accent);border-radius:10px;background:var(--accent);color:var(--accent-fg);font:inherit;font-weight:600;text-decoration:none;cursor:pointer}`

// logo is the web UI's icon (web/public/icon.svg), inline: the pages load nothing.
const logo = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 64 64" aria-hidden="true"><rect width="64" height="64" rx="14" fill="#1f6f5c"/><path d="M14 46V18h10v28M30 46V18h20v12H30M14 30h36" fill="none" stroke="#fff" stroke-width="5" stroke-linejoin="round"/></svg>`

const (
	pageHead = `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><meta name="color-scheme" content="light dark"><meta name="theme-color" content="#1f6f5c"><title>paddock</title><style>` + pageStyle + `</style></head><body><main>`
	pageFoot = `</main></body></html>`
)

// pageCSP is the pages' Content-Security-Policy: nothing but their own style sheet.
var pageCSP = sync.OnceValue(func() string {
	sum := sha256.Sum256([]byte(pageStyle))
	return "default-src 'none'; style-src 'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
})

// codeText shows text for a page, what it names between backticks (a command to run)
// as code.
func codeText(text string) template.HTML {
	var b strings.Builder
	parts := strings.Split(text, "`")
	for i, part := range parts {
		switch {
		case i%2 == 0:
			b.WriteString(template.HTMLEscapeString(part))
		case i < len(parts)-1:
			b.WriteString("<code>" + template.HTMLEscapeString(part) + "</code>")
		default: // a backtick without its pair
			b.WriteString("`" + template.HTMLEscapeString(part))
		}
	}
	return template.HTML(b.String())
}

// page is a template parsed on first use, the logo put before its heading.
func page(name, text string) func() *template.Template {
	return sync.OnceValue(func() *template.Template {
		text = strings.Replace(text, "<h1>", "<h1>"+logo, 1)
		return template.Must(template.New(name).Funcs(template.FuncMap{"code": codeText}).Parse(text))
	})
}

// lazyRegexp is a regular expression compiled on first use: compiled when the program
// starts, every CLI command would pay for the server's expressions.
func lazyRegexp(expr string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })
}

func writePage(w http.ResponseWriter, status int, t func() *template.Template, data any) {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Security-Policy", pageCSP())
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	t().Execute(w, data)
}

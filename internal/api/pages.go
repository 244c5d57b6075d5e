package api

import (
	"html/template"
	"net/http"
	"regexp"
	"sync"
)

// The few pages the TCP listener shows a browser before there is a web UI. They run no
// script and load nothing. Each is parsed when first shown, not when the program
// starts: every CLI command would pay for it.
var (
	pageHead = `<!doctype html><html><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>paddock</title></head><body>`

	loginPage = page("login", pageHead+`
<h1>Sign in to paddock</h1>
<p>This browser will be able to see and control your sandboxes for 30 days, or until <code>paddock web --stop</code>.</p>
<form method="post" action="/login"><input type="hidden" name="code" value="{{.}}"><button type="submit">Sign in</button></form>
</body></html>`)

	signedInPage = page("signed-in", pageHead+`
<h1>paddock</h1>
<p>This browser is signed in. There is no web UI here yet: the API is under <a href="/v1/sandboxes">/v1/</a>.</p>
<form method="post" action="/logout"><button type="submit">Sign out</button></form>
</body></html>`)

	githubLoginPage = page("github-login", pageHead+`
<h1>Sign in to paddock</h1>
<p>This server lets the members of the GitHub organization <b>{{.}}</b> sign in.</p>
<p><a href="/auth/github">Sign in with GitHub</a></p>
</body></html>`)

	signedInAsPage = page("signed-in-as", `<!doctype html><html><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><meta http-equiv="refresh" content="0; url=/"><title>paddock</title></head><body>
<h1>paddock</h1>
<p>Signed in as {{.}}. <a href="/">Continue</a></p>
</body></html>`)

	errorPage = page("error", pageHead+`
<h1>paddock</h1>
<p>{{.Message}}</p>{{if .Hint}}
<p>{{.Hint}}</p>{{end}}{{if .GitHub}}
<p><a href="/auth/github">Sign in with GitHub</a></p>{{end}}
</body></html>`)
)

// page is a template parsed on first use.
func page(name, text string) func() *template.Template {
	return sync.OnceValue(func() *template.Template {
		return template.Must(template.New(name).Parse(text))
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
	h.Set("Content-Security-Policy", "default-src 'none'; form-action 'self'; frame-ancestors 'none'")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	t().Execute(w, data)
}

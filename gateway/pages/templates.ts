import Mustache from 'mustache';

/**
 * The login, consent and error pages: plain HTML forms that work without JavaScript. Rendered with
 * Mustache, whose `{{ }}` escapes every value; no page is assembled by string concatenation.
 */
const layout = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{title}} · Tessera</title>
<style>
  :root { color-scheme: light dark; --accent: #2f5fd0; }
  body { font: 16px/1.5 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 0; min-height: 100vh;
         display: grid; place-items: center; background: #f3f5f9; color: #1c2230; }
  main { background: #fff; width: min(24rem, 92vw); padding: 2rem 2.25rem; border-radius: 12px;
         box-shadow: 0 4px 24px rgb(20 30 60 / 12%); }
  h1 { font-size: 1.35rem; margin: 0 0 .25rem; }
  p.lead { margin: 0 0 1.5rem; color: #5a6272; }
  label { display: block; font-weight: 600; margin: 1rem 0 .35rem; }
  input[type=text], input[type=password] { box-sizing: border-box; width: 100%; padding: .6rem .75rem;
         border: 1px solid #c5cad6; border-radius: 8px; font: inherit; }
  input:focus { outline: 2px solid var(--accent); outline-offset: 1px; }
  .actions { display: flex; gap: .75rem; margin-top: 1.5rem; }
  button { flex: 1; padding: .65rem 1rem; border-radius: 8px; border: 1px solid var(--accent); font: inherit;
           font-weight: 600; cursor: pointer; background: var(--accent); color: #fff; }
  button.secondary { background: #fff; color: var(--accent); }
  .error { background: #fdecec; color: #8a1c1c; border-radius: 8px; padding: .6rem .8rem; margin: 0 0 1rem; }
  ul.scopes { padding-left: 1.2rem; margin: .5rem 0 0; }
  label.check { font-weight: 400; margin-top: 1.25rem; }
  section.grant { border-top: 1px solid #c5cad6; margin-top: 1.25rem; padding-top: .5rem; }
  section.grant h2 { font-size: 1.1rem; margin: .5rem 0; }
  footer { margin-top: 1.5rem; font-size: .8rem; color: #8a91a0; text-align: center; }
  @media (prefers-color-scheme: dark) {
    body { background: #12151c; color: #e3e6ee; } main { background: #1c212b; box-shadow: none; }
    p.lead, footer { color: #9aa2b3; } input[type=text], input[type=password] { background: #12151c; color: inherit; border-color: #3a4150; }
    button.secondary { background: transparent; }
  }
</style>
</head>
<body>
<main>
{{> content}}
<footer>Tessera</footer>
</main>
</body>
</html>
`;

const login = `<h1>Sign in</h1>
<p class="lead">to continue to <strong>{{clientName}}</strong></p>
{{#error}}<p class="error" role="alert">{{error}}</p>{{/error}}
<form method="post" action="{{action}}">
  <input type="hidden" name="csrf_token" value="{{csrfToken}}">
  <input type="hidden" name="request" value="{{request}}">
  <label for="username">Username</label>
  <input id="username" name="username" type="text" autocomplete="username" value="{{username}}" required autofocus>
  <label for="password">Password</label>
  <input id="password" name="password" type="password" autocomplete="current-password" required>
  <div class="actions"><button type="submit">Sign in</button></div>
</form>`;

// The authorization endpoint's consent form carries its signed interaction
// (gateway/pages/consent_interaction.ts); the device page's carries the user code as `request`.
const consent = `<h1>Allow access?</h1>
<p class="lead"><strong>{{clientName}}</strong> asks to access your account{{#userName}} (<strong>{{userName}}</strong>){{/userName}}:</p>
<ul class="scopes">
{{#scopes}}  <li>{{description}}</li>
{{/scopes}}</ul>
<form method="post" action="{{action}}">
  <input type="hidden" name="csrf_token" value="{{csrfToken}}">
  {{#interaction}}<input type="hidden" name="interaction" value="{{interaction}}">{{/interaction}}
  {{#request}}<input type="hidden" name="request" value="{{request}}">{{/request}}
  {{#remember}}<label class="check"><input type="checkbox" name="remember" value="on"> Remember my decision</label>{{/remember}}
  <div class="actions">
    <button type="submit" name="decision" value="deny" class="secondary">Deny</button>
    <button type="submit" name="decision" value="allow">Allow</button>
  </div>
</form>`;

const error = `<h1>{{title}}</h1>
<p class="error" role="alert">{{message}}</p>
<p class="lead">You can close this window and try again from the application.</p>`;

const device = `<h1>Connect a device</h1>
<p class="lead">Enter the code shown on your device.</p>
{{#error}}<p class="error" role="alert">{{error}}</p>{{/error}}
<form method="post" action="{{action}}">
  <input type="hidden" name="csrf_token" value="{{csrfToken}}">
  <label for="user_code">Code</label>
  <input id="user_code" name="user_code" type="text" autocomplete="one-time-code" autocapitalize="characters"
         spellcheck="false" placeholder="XXXX-XXXX" value="{{userCode}}" required autofocus>
  <div class="actions"><button type="submit">Continue</button></div>
</form>`;

const done = `<h1>{{title}}</h1>
<p class="lead">{{message}}</p>`;

const logout = `<h1>Sign out?</h1>
<p class="lead">{{#clientName}}<strong>{{clientName}}</strong> asks to sign you out{{/clientName}}{{^clientName}}Sign out{{/clientName}}{{#userName}} (<strong>{{userName}}</strong>){{/userName}}.</p>
<form method="post" action="{{action}}">
  <input type="hidden" name="csrf_token" value="{{csrfToken}}">
  <input type="hidden" name="request" value="{{request}}">
  <div class="actions">
    <button type="submit" name="decision" value="stay" class="secondary">Stay signed in</button>
    <button type="submit" name="decision" value="logout">Sign out</button>
  </div>
</form>`;

// Each application the user gave access to, with its own revoke form (gateway/pages/grants_page.ts).
const grants = `<h1>Application access</h1>
<p class="lead">Applications you{{#userName}} (<strong>{{userName}}</strong>){{/userName}} gave access to.</p>
{{#message}}<p class="lead" role="status">{{message}}</p>{{/message}}
{{#grants}}<section class="grant">
  <h2>{{clientName}}</h2>
  {{#remembered}}<p>Remembered consent{{#until}} until {{until}}{{/until}}:</p>
  <ul class="scopes">
  {{#scopes}}  <li>{{description}}</li>
  {{/scopes}}</ul>{{/remembered}}
  {{#refreshes}}<p>Can stay connected when you are not using it.</p>{{/refreshes}}
  <form method="post" action="{{action}}">
    <input type="hidden" name="csrf_token" value="{{csrfToken}}">
    <input type="hidden" name="client_id" value="{{clientId}}">
    <div class="actions"><button type="submit" class="secondary">Revoke access</button></div>
  </form>
</section>
{{/grants}}{{^grants}}<p>No application has access.</p>{{/grants}}`;

const pages = { login, consent, error, device, done, logout, grants } as const;

export type PageName = keyof typeof pages;

export function renderPage(name: PageName, title: string, view: Record<string, unknown>): string {
  return Mustache.render(layout, { title, ...view }, { content: pages[name] });
}

// A small browser for login flows: follows redirects by hand, keeps cookies per host and port, and submits the
// HTML forms an OpenID provider's interaction pages show (their hidden and named fields, plus ones given).

export interface Visit {
  status: number;
  url: string;
  headers: Headers;
  body: string;
}

export class Browser {
  private readonly jars = new Map<string, Map<string, string>>();

  cookies(url: string): Map<string, string> {
    const host = new URL(url).host;
    let jar = this.jars.get(host);
    if (jar === undefined) {
      jar = new Map();
      this.jars.set(host, jar);
    }
    return jar;
  }

  private keep(url: string, headers: Headers): void {
    const jar = this.cookies(url);
    for (const line of headers.getSetCookie()) {
      const [pair = '', ...attributes] = line.split(';');
      const at = pair.indexOf('=');
      const name = pair.slice(0, at).trim();
      const value = pair.slice(at + 1).trim();
      const expired = attributes.some(
        (a) => /^\s*max-age=0\s*$/i.test(a) || /expires=thu, 01 jan 1970/i.test(a),
      );
      if (expired || value === '') jar.delete(name);
      else jar.set(name, value);
    }
  }

  /** One request, no redirect followed. */
  async request(
    url: string,
    init: { method?: string; body?: string; headers?: Record<string, string> } = {},
  ): Promise<Visit> {
    const jar = this.cookies(url);
    const cookie = [...jar].map(([n, v]) => `${n}=${v}`).join('; ');
    const answer = await fetch(url, {
      method: init.method ?? 'GET',
      redirect: 'manual',
      headers: { ...(cookie === '' ? {} : { cookie }), ...init.headers },
      ...(init.body === undefined ? {} : { body: init.body }),
    });
    this.keep(url, answer.headers);
    return { status: answer.status, url, headers: answer.headers, body: await answer.text() };
  }

  /** Requests `url` and follows redirects (at most `hops`), returning the last answer. */
  async go(
    url: string,
    init: { method?: string; body?: string; headers?: Record<string, string> } = {},
    hops = 10,
  ): Promise<Visit> {
    let visit = await this.request(url, init);
    for (let i = 0; i < hops && visit.status >= 300 && visit.status < 400; i++) {
      const location = visit.headers.get('location');
      if (location === null) break;
      // A 303 (and a 302 after a POST, as browsers do) becomes a GET.
      visit = await this.request(new URL(location, visit.url).toString());
    }
    return visit;
  }

  /** Submits the first form of a page with its hidden fields and `fields`, following redirects. */
  async submit(page: Visit, fields: Record<string, string> = {}): Promise<Visit> {
    const form = /<form[^>]*action="([^"]*)"[^>]*>([\s\S]*?)<\/form>/i.exec(page.body);
    if (form === null) throw new Error(`no form on ${page.url}: ${page.body.slice(0, 200)}`);
    const values = new URLSearchParams();
    for (const input of form[2]!.matchAll(/<input[^>]*type="hidden"[^>]*>/gi)) {
      const name = /name="([^"]*)"/.exec(input[0])?.[1];
      const value = /value="([^"]*)"/.exec(input[0])?.[1] ?? '';
      if (name !== undefined) values.set(name, value);
    }
    for (const [name, value] of Object.entries(fields)) values.set(name, value);
    const action = new URL(form[1]!.replace(/&amp;/g, '&'), page.url).toString();
    return this.go(action, {
      method: 'POST',
      body: values.toString(),
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
  }
}

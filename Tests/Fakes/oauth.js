// The OAuth client-credentials token endpoint the HMS and ADM fakes share: it checks the grant's
// form (`grant_type=client_credentials`, the client's id and secret, and any `extra` fields such
// as ADM's scope), issues bearers, and tells a send's bearer from one it never issued.
'use strict';

// `stats` gets tokenRequests, tokensIssued and badGrants counted; `answer(res, status, json)`
// and `problem(text)` are the fake's own. `revoked`: the client is refused (401 invalid_client).
function clientCredentials({ clientID, clientSecret, extra = {}, revoked = false, prefix, answerExtra = {}, stats, answer, problem }) {
  const issued = new Map();   // bearer -> serial (1 for the first issued)
  function handle(req, res, body) {
    stats.tokenRequests++;
    const form = new URLSearchParams(body.toString('utf8'));
    const refuse = (why, status = 400) => {
      stats.badGrants++;
      problem('token: ' + why);
      answer(res, status, { error: 'invalid_client', error_description: why });
    };
    if (!String(req.headers['content-type'] || '').startsWith('application/x-www-form-urlencoded')) return refuse('content-type');
    if (form.get('grant_type') !== 'client_credentials') return refuse('grant_type');
    for (const [key, value] of Object.entries(extra)) {
      if (form.get(key) !== value) return refuse(key + ' ' + form.get(key));
    }
    if (form.get('client_id') !== clientID) return refuse('client_id');
    if (form.get('client_secret') !== clientSecret) return refuse('client_secret');
    if (revoked) return refuse('client revoked', 401);
    const token = `${prefix}-${++stats.tokensIssued}-${Math.random().toString(36).slice(2)}`;
    issued.set(token, stats.tokensIssued);
    answer(res, 200, Object.assign({ access_token: token, expires_in: 3600 }, answerExtra));
  }
  // The serial of the bearer in an Authorization header; undefined for none or one not issued here.
  function serial(req) {
    const auth = String(req.headers['authorization'] || '');
    return auth.startsWith('Bearer ') ? issued.get(auth.slice(7)) : undefined;
  }
  return { handle, serial };
}

module.exports = { clientCredentials };

// The OpenID provider of the tests: oidc-provider (a certified implementation) on loopback.
// Usage: node server.mjs CONFIG.json. The configuration names the port, the signing keys (a
// private JWKS), the clients and the audience of access tokens (issued as JWTs); the users and
// their groups are read from the file named by `users_file` at every sign-in and token, so a test
// removes a user from the directory by rewriting it.
import { readFileSync } from 'node:fs';
import Provider from 'oidc-provider';

const config = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const issuer = `http://127.0.0.1:${config.port}`;
const users = () => JSON.parse(readFileSync(config.users_file, 'utf8'));
const scope = 'openid email profile groups';

function userClaims(accountId) {
  const user = users()[accountId];
  if (!user) return undefined;
  return {
    sub: accountId, email: user.email, preferred_username: user.preferred_username ?? accountId,
    groups: user.groups ?? [],
  };
}

const provider = new Provider(issuer, {
  clients: config.clients.map((client) => ({
    grant_types: ['authorization_code'], response_types: ['code'], ...client,
  })),
  jwks: config.jwks,
  cookies: { keys: ['tests-only-cookie-key'] },
  claims: { openid: ['sub'], email: ['email'], profile: ['preferred_username'], groups: ['groups'] },
  scopes: scope.split(' '),
  conformIdTokenClaims: false,
  ttl: { AccessToken: config.access_token_seconds ?? 600, IdToken: 600 },
  async findAccount(ctx, id) {
    if (!userClaims(id)) return undefined;
    return { accountId: id, claims: () => userClaims(id) };
  },
  // First-party clients: sign-in grants the scopes at once, without a consent page.
  async loadExistingGrant(ctx) {
    const { client, session } = ctx.oidc;
    const grant = new ctx.oidc.provider.Grant({ clientId: client.clientId, accountId: session.accountId });
    grant.addOIDCScope(scope);
    grant.addOIDCClaims(['sub', 'email', 'preferred_username', 'groups']);
    grant.addResourceScope(config.audience, 'catalog');
    await grant.save();
    return grant;
  },
  async extraTokenClaims(ctx, token) {
    if (!token.accountId) return undefined;
    const { sub, ...claims } = userClaims(token.accountId) ?? {};
    return claims;
  },
  features: {
    devInteractions: { enabled: true },
    resourceIndicators: {
      enabled: true,
      defaultResource: () => config.audience,
      useGrantedResource: () => true,
      getResourceServerInfo: () => ({
        scope: 'catalog', audience: config.audience, accessTokenFormat: 'jwt',
        accessTokenTTL: config.access_token_seconds ?? 600,
      }),
    },
  },
});
provider.listen(config.port, '127.0.0.1', () => console.log(`listening on ${issuer}`));

// The same package from CommonJS.
const assert = require('node:assert/strict');
const client = require('@agent-sessions/client');
assert.equal(typeof client.SessionClient, 'function');
assert.equal(typeof client.SessionDisposedError, 'function');
console.log('client-only (CommonJS require): ok');

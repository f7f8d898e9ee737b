// The image's Node must be the newest patch of its line the npm registry serves, so a security release is
// noticed by the next `npm test` rather than by an advisory months later. It asks the registry (as the image
// build and the data-plane tests' Node download already do): an unreachable registry fails the test with that
// reason, because a skipped check is one nobody reads, and CI reaches the registry.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { NODE_VERSION } from '../../toolchain/artifacts.js';
import { pinProblem, servedNodeVersions } from '../../toolchain/node-release.js';

test(`the image's Node (${NODE_VERSION}) is the newest patch of its line on the npm registry`, async () => {
  let served: string[];
  try {
    served = await servedNodeVersions();
  } catch (error) {
    const why = error instanceof Error ? error.message : String(error);
    assert.fail(
      `${why}; so the image's Node ${NODE_VERSION} could not be compared with the newest of its line`,
    );
  }
  const problem = pinProblem(NODE_VERSION, served);
  assert.equal(problem, undefined, problem);
});

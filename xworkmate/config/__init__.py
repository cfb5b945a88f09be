"""The declarative configuration: one TOML file, validated as a whole at start-up.

- keys: what a key is (default, checker, environment variable) and the checkers;
- section: a section and the typed object its values become;
- kernel: the kernel's own sections (service, admin, database, broker,
  workspace, delivery) and the channel and periodic-job tables;
- load: reading the file and the environment, the typed Config;
- channels: the outbox's [[delivery.channels]] and [delivery.routes];
- show: the effective configuration, secrets masked.

The apps declare their sections in their own ``conf.py`` and xworkmate.wiring
lists them all (D-K16). Nothing here needs Django set up: settings.py loads it.
"""

from xworkmate.config.channels import DeliveryChannel
from xworkmate.config.kernel import (
    DELIVERY_KINDS,
    DELIVERY_PURPOSES,
    RECORD_CHANNEL,
    REMOTE_ADDR,
)
from xworkmate.config.keys import ConfigError, Key
from xworkmate.config.load import (
    CONFIG_ENV,
    HOME_ENV,
    Config,
    JobEntry,
    PeriodicJob,
    load_config,
    merge_jobs,
    parse_config_text,
    resolve_config_path,
    resolve_home,
)
from xworkmate.config.section import Section
from xworkmate.config.show import MASK, effective_config, mask_url

__all__ = [
    "CONFIG_ENV",
    "DELIVERY_KINDS",
    "DELIVERY_PURPOSES",
    "HOME_ENV",
    "MASK",
    "RECORD_CHANNEL",
    "REMOTE_ADDR",
    "Config",
    "ConfigError",
    "DeliveryChannel",
    "JobEntry",
    "Key",
    "PeriodicJob",
    "Section",
    "effective_config",
    "load_config",
    "mask_url",
    "merge_jobs",
    "parse_config_text",
    "resolve_config_path",
    "resolve_home",
]

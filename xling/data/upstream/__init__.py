from xling.data.formats import FormatError  # noqa: F401
from xling.data.upstream.archives import *  # noqa: F401,F403

"""One module per API family: pure operation builders, an ``Async<Family>`` class and its generated twin."""

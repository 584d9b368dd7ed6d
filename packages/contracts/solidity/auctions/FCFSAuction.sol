// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

import {Math} from "@openzeppelin/contracts/utils/math/Math.sol";
import {CappedAuction} from "./CappedAuction.sol";

/// @title First come, first served: a fixed supply at a fixed price, delivered at bid time.
/// @notice A bid larger than what is left buys the rest and pays only for it; selling out ends the auction.
///         Unsold supply returns to the project wallet at the end.
contract FCFSAuction is CappedAuction {
    /// @notice Starting price in bid-coin units per whole token.
    uint256 public rate;
    /// @notice Price of the latest purchase (the final price once ended).
    uint256 public currentRate;

    function getCurrentRate() public view override returns (uint256) {
        return status == AuctionStatus.Ended ? currentRate : _priceNow();
    }

    function _initializeType(AuctionParams calldata params) internal virtual override {
        if (params.rate == 0) revert InvalidParams("rate");
        rate = params.rate;
        currentRate = params.rate;
    }

    function _priceNow() internal view virtual returns (uint256) {
        return rate;
    }

    function _available() internal view virtual returns (uint256) {
        return numberOfTokensToBeDistributed - soldProjectTokens;
    }

    function _shouldEnd() internal view override returns (bool) {
        return super._shouldEnd() || _available() == 0;
    }

    function _placeBid(address bidder, uint256 amount) internal virtual override {
        uint256 price = _priceNow();
        _setCurrentRate(price);
        uint256 tokens = Math.min(_tokensFor(amount, price), _available());
        if (tokens == 0) revert BidTooSmall(amount);
        uint256 cost = _costOf(tokens, price);
        _record(bidder, cost);
        soldProjectTokens += tokens;
        _collect(bidder, cost, projectWallet, price);
        _deliver(bidder, tokens);
        emit TokenBought(bidder, cost, tokens);
        emit VariableChange("soldProjectTokens", soldProjectTokens);
        if (_available() == 0) _finish();
    }

    function _deliver(address bidder, uint256 tokens) internal virtual {
        _sendTokens(bidder, tokens);
    }

    function _finalize() internal virtual override returns (uint256 finalPrice) {
        // A sell-out finalizes in the block of the last purchase, so this is that purchase's price; a time-out
        // reports the price at the end (the final rate for the Dutch types).
        _setCurrentRate(_priceNow());
        _disposeUnsold(initialSupply - soldProjectTokens);
        return currentRate;
    }

    function _setCurrentRate(uint256 price) internal {
        if (price == currentRate) return;
        currentRate = price;
        emit VariableChange("currentRate", price);
    }
}
